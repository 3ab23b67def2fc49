#!/usr/bin/env bash
# ESA-3D vs ESA-2D on QM9 HOMO / LUMO / gap (docs/results/3d.md, issue 20).
# Usage: benchmarks/qm9_3d_vs_2d.sh OUT [EPOCHS]   (2 runs at a time, 1 thread each)
set -euo pipefail
OUT=${1:?output folder}
EPOCHS=${2:-50}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MOLPROP_NO_PROGRESS=1
cd "$HERE"
for n in 3000 7000; do
  [ -f "$OUT/qm9_$n.csv" ] || "$PY" -m benchmarks.qm9_3d_vs_2d prepare "$OUT" --n-train "$n"
done
C="--split-type column --split-column split --preset small --epochs $EPOCHS --loss mae --target-columns homo_ev lumo_ev gap_ev"
F3D="--featurizer 3d --featurizer-params {\"include_h\":false} --pair-rbf 16"
jobs=()
for seed in 0 1 2; do
  jobs+=("2d_n3000_s$seed|--data $OUT/qm9_3000.csv $C --seed $seed")
  jobs+=("3d_n3000_s$seed|--data $OUT/qm9_3000.extxyz $F3D $C --seed $seed")
done
jobs+=("2d_n7000_s0|--data $OUT/qm9_7000.csv $C --seed 0")
jobs+=("3d_n7000_s0|--data $OUT/qm9_7000.extxyz $F3D $C --seed 0")
mkdir -p "$OUT/runs" "$OUT/logs"
printf '%s\n' "${jobs[@]}" | xargs -d '\n' -P 2 -I{} bash -c '
  name=${1%%|*}; args=${1#*|}
  [ -f "$2/runs/$name/metrics.json" ] && exit 0
  echo "$(date -u +%T) start $name"
  "$3" -m molprop.cli.main train $args --out "$2/runs/$name" > "$2/logs/$name.log" 2>&1 \
    && echo "$(date -u +%T) done $name" || echo "$(date -u +%T) FAILED $name"
' _ {} "$OUT" "$PY"
"$PY" -m benchmarks.qm9_3d_vs_2d collect "$OUT" --json "$HERE/benchmarks/results/qm9_3d_vs_2d.json"
