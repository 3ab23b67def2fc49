"""What an inductive ``delta-measured`` model learned, on a finished ``molprop
transfer-benchmark`` run.

The served prediction is ``a'·x + b' + r(mol)`` (``x`` the pretrained model's prediction,
``a', b'`` the skip's fit); the network ``r`` was trained on the measured-label residual
``R = high − (a·low + b)`` of the training molecules. Its error on a molecule splits exactly as

    high − (a'·x + b' + r) = [(a·low + b) − (a'·x + b')] + [R − r]

(the pretrained model's mapped error, which ``r`` cannot see, plus what ``r`` leaves of ``R``).
Per seed, on the validation and test molecules (their measured low labels are looked up in the
``--data`` table by InChIKey for this measurement only; the model never reads them): RMSE of
``R`` (what ``r`` could remove), of ``R − r`` (what it left), of the pretrained part, and of the
total (= ``metrics.json``'s RMSE). Writes ``benchmarks/results/transfer_residual_<name>.json``.

    python -m benchmarks.transfer_residual --run /tmp/runs/g4mp2_ind --data g4mp2_ip.csv \
        --low-column ip_b3lyp --name g4mp2
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.transfer_crossfit import RESULTS, _rmse, low_labels_by_key, run_parser
from molprop.featurize import build_featurizer
from molprop.inference.augment import PretrainedSource
from molprop.inference.predictor import Predictor
from molprop.transfer.crossfit import molecule_keys


def measure_part(model: Path, frame: pd.DataFrame, low: np.ndarray, high: str) -> dict:
    fits = json.loads((model / "metrics.json").read_text())["training_targets"]
    a, b = fits["low_weight"][0][0], fits["low_bias"][0]
    a_x, b_x = fits["x_weight"][0][0], fits["x_bias"][0]
    smiles = frame["smiles"].tolist()
    served = Predictor.from_pretrained(model).predict(smiles, interval=None)[high]
    source = PretrainedSource(model / "pretrained")
    featurize = build_featurizer(source.config.featurizer).from_smiles
    x = source.low_predictions([featurize(s) for s in smiles])[:, 0]
    y = frame[high].to_numpy(float)
    resid = y - (a * low + b)
    r = served - (a_x * x + b_x)
    zero = np.zeros_like(y)
    return {
        "n": len(y),
        "rmse_total": _rmse(served, y),
        "rmse_skip_only": _rmse(a_x * x + b_x, y),
        "rmse_R": _rmse(resid, zero),
        "rmse_R_minus_r": _rmse(resid - r, zero),
        "rmse_pretrained_part": _rmse(a * low + b - (a_x * x + b_x), zero),
        "corr_R_r": float(np.corrcoef(resid, r)[0, 1]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--high-column", required=True)
    parser.add_argument("--strategy", default="delta-measured")
    args = parser.parse_args(argv)
    run = Path(args.run)
    low_by_key = low_labels_by_key(args.data, args.low_column)
    seeds = []
    for seed_dir in sorted(run.glob("seed_*")):
        model = seed_dir / "inductive" / args.strategy
        if not (model / "metrics.json").exists():
            continue
        row: dict = {"seed": int(seed_dir.name.split("_")[1])}
        for part in ("val", "test"):
            frame = pd.read_csv(seed_dir / "inductive" / "split" / f"{part}.csv")
            low = np.array([low_by_key[k] for k in molecule_keys(frame["smiles"].tolist())])
            row[part] = measure_part(model, frame, low, args.high_column)
        print(row)
        seeds.append(row)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"transfer_residual_{args.name}.json"
    path.write_text(
        json.dumps({"run": str(run), "strategy": args.strategy, "seeds": seeds}, indent=2)
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
