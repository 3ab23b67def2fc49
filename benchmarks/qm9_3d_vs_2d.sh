#!/usr/bin/env bash
# ESA-3D vs ESA-2D on QM9 HOMO / LUMO / gap (docs/results/3d.md).
# Usage: [JOBS=1] benchmarks/qm9_3d_vs_2d.sh OUT [EPOCHS [EPOCHS_7000]]
#   (JOBS runs at a time, default 2, 1 thread each; JOBS=1 for seconds per epoch of an idle core)
set -euo pipefail
OUT=${1:?output folder}
EPOCHS=${2:-50}
JOBS=${JOBS:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MOLPROP_NO_PROGRESS=1
cd "$HERE"
for n in 3000 7000; do
  [ -f "$OUT/qm9_$n.csv" ] || "$PY" -m benchmarks.qm9_3d_vs_2d prepare "$OUT" --n-train "$n"
done
C="--split-type column --split-column split --preset small --epochs $EPOCHS --loss mae --target-columns homo_ev lumo_ev gap_ev"
# 3D: the featuriser's defaults (since featuriser version 4: heavy-atom bond tokens, 16
# element-pair Gaussians). Before, the same setting was spelled out:
#   --featurizer-params {"include_h":false} --pair-rbf 16
F3D="--featurizer 3d"
# 7,000 molecules: EPOCHS / 2 epochs, about the optimisation steps of 3,000 x EPOCHS
# (docs/results/3d.md: 25 epochs, one run at a time; a 10-epoch run is kept there too)
E7=${3:-$(( EPOCHS / 2 ))}
jobs=()
for seed in 0 1 2; do
  jobs+=("2d_n3000_s$seed|--data $OUT/qm9_3000.csv $C --seed $seed")
  jobs+=("3d_n3000_s$seed|--data $OUT/qm9_3000.extxyz $F3D $C --seed $seed")
done
jobs+=("2d_n7000_e${E7}_s0|--data $OUT/qm9_7000.csv $C --epochs $E7 --seed 0")
jobs+=("3d_n7000_e${E7}_s0|--data $OUT/qm9_7000.extxyz $F3D $C --epochs $E7 --seed 0")
mkdir -p "$OUT/runs" "$OUT/logs"
running() { pgrep -fc -- "molprop.cli.main train .*--out $OUT/runs/" || true; }
for job in "${jobs[@]}"; do
  name=${job%%|*}; args=${job#*|}
  [ -e "$OUT/logs/$name.log" ] && continue  # done or under way (delete its log to rerun)
  while [ "$(running)" -ge "$JOBS" ]; do sleep 15; done  # at most JOBS runs at once
  echo "$(date -u +%T) start $name"
  # shellcheck disable=SC2086  # $args is a word list on purpose
  ( "$PY" -m molprop.cli.main train $args --out "$OUT/runs/$name" > "$OUT/logs/$name.log" 2>&1 \
      && echo "$(date -u +%T) done $name" || echo "$(date -u +%T) FAILED $name" ) &
  sleep 10
done
wait
NAME=${NAME:-qm9_3d_vs_2d}  # result files: benchmarks/results/NAME{,_conformers}.json, docs/results/NAME.png
"$PY" -m benchmarks.qm9_3d_vs_2d collect "$OUT" --json "$HERE/benchmarks/results/$NAME.json" \
  --plot "$HERE/docs/results/$NAME.png"
"$PY" -m benchmarks.qm9_3d_vs_2d conformers "$OUT" --json "$HERE/benchmarks/results/${NAME}_conformers.json"
