"""Cross-fitting measurement on a finished ``molprop transfer-benchmark`` run (inductive mode).

Per seed, the error of the low-fidelity predictions the augmented head is trained on versus
the ones it meets at test time (RMSE against the measured low label):

- ``in_sample_train``: the full pretrained model on the training molecules (it saw them);
- ``out_of_fold_train``: the fold models, each on the fold it never saw (cross-fitting);
- ``full_model_test``: the full pretrained model on the test molecules (never seen).

Training inputs whose error matches the test inputs' are the point of cross-fitting. Also the
inductive bars on the **validation** molecules (``linear_map_val_rmse``: high ≈ a·pred + b
fitted on the out-of-fold predictions, ``linear_map_insample_val_rmse``: fitted on the in-sample
ones, both applied to the full model's validation predictions), so that a method can be chosen
against the bar without the test set, and the run's ``results.csv``. Writes ``benchmarks/results/transfer_crossfit_<name>.json``.

    python -m benchmarks.transfer_crossfit --run /tmp/runs/g4mp2 --data g4mp2_ip.csv \
        --low-column ip_b3lyp --name g4mp2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.featurize import build_featurizer
from molprop.inference.augment import PretrainedSource
from molprop.transfer.crossfit import assign_folds, molecule_keys
from molprop.transfer.fidelity_split import KEY_COLUMN

RESULTS = Path(__file__).resolve().parent / "results"


def _rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def measure_seed(seed_dir: Path, low_by_key: dict[str, float], seed: int) -> dict:
    ind = seed_dir / "inductive"
    full = PretrainedSource(ind / "pretrained")
    featurize = build_featurizer(full.config.featurizer).from_smiles
    train = pd.read_csv(ind / "split" / "train.csv")
    test = pd.read_csv(ind / "split" / "test.csv")
    train_low = train[full.target_names[0]].to_numpy(float)
    test_keys = molecule_keys(test["smiles"].tolist())
    test_low = np.array([low_by_key[k] for k in test_keys])
    graphs = [featurize(s) for s in train["smiles"]]
    in_sample = full.low_predictions(graphs)[:, 0]
    folds = sorted((ind / "crossfit").glob("fold_*"))
    fold = assign_folds(molecule_keys(train["smiles"].tolist()), len(folds), seed)
    oof = np.full(len(train), np.nan)
    for k, fold_dir in enumerate(folds):
        rows = np.flatnonzero(fold == k)
        oof[rows] = PretrainedSource(fold_dir).low_predictions([graphs[i] for i in rows])[:, 0]
    test_pred = full.low_predictions([featurize(s) for s in test["smiles"]])[:, 0]
    val = pd.read_csv(ind / "split" / "val.csv")
    high = next(c for c in val.columns if c not in ("smiles", KEY_COLUMN, full.target_names[0]))
    val_pred = full.low_predictions([featurize(s) for s in val["smiles"]])[:, 0]
    bars = {}
    for name, x in (("linear_map", oof), ("linear_map_insample", in_sample)):
        a, b = np.polyfit(x, train[high].to_numpy(float), 1)
        bars[f"{name}_val_rmse"] = _rmse(a * val_pred + b, val[high].to_numpy(float))
        bars[f"{name}_test_rmse"] = _rmse(a * test_pred + b, test[high].to_numpy(float))
    return {
        "seed": seed,
        "folds": len(folds),
        "n_train": len(train),
        "n_test": len(test),
        "rmse_low_in_sample_train": _rmse(in_sample, train_low),
        "rmse_low_out_of_fold_train": _rmse(oof, train_low),
        "rmse_low_full_model_test": _rmse(test_pred, test_low),
        "high_column": high,
        **bars,
    }


def run_parser(description: str) -> argparse.ArgumentParser:
    """--run, --data, --low-column, --name: a benchmark run and its data table."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--run", required=True, help="transfer-benchmark output directory")
    parser.add_argument("--data", required=True, help="the benchmark's --data table")
    parser.add_argument("--low-column", required=True)
    parser.add_argument("--name", required=True)
    return parser


def low_labels_by_key(data: str | Path, column: str) -> dict[str, float]:
    """InChIKey -> measured low label of every molecule of the benchmark's table."""
    frame = pd.read_csv(data)
    keys = molecule_keys(frame["smiles"].tolist())
    return dict(zip(keys, frame[column].astype(float), strict=True))


def main(argv: list[str] | None = None) -> int:
    args = run_parser(__doc__.splitlines()[0]).parse_args(argv)
    run = Path(args.run)
    low_by_key = low_labels_by_key(args.data, args.low_column)
    seeds = []
    for seed_dir in sorted(run.glob("seed_*")):
        seed = int(seed_dir.name.split("_")[1])
        if (seed_dir / "inductive" / "crossfit").is_dir():
            seeds.append(measure_seed(seed_dir, low_by_key, seed))
            print(seeds[-1])
    results = pd.read_csv(run / "results.csv")
    out = {
        "run": str(run),
        "request": json.loads((run / "request.json").read_text()),
        "crossfit": seeds,
        "results": results.to_dict(orient="records"),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"transfer_crossfit_{args.name}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
