"""Reference on *our* splits: chemprop v2 with its default settings (50 epochs) trained
on exactly the scaffold split that ``molprop train --seed S`` uses (same CSV, same rows), so its
test RMSE is directly comparable with ``benchmarks.core_defaults`` / ``benchmarks.core_sweep``.
Writes docs/results/core_chemprop.json.

    python -m benchmarks.core_chemprop [--datasets esol freesolv] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import VENV_BIN, chemprop_env, run_process
from benchmarks.core_defaults import DATASETS, REPO
from molprop.data.splits import make_split
from molprop.training.metrics import compute_metrics


def run(dataset: str, seed: int, out_root: Path, epochs: int) -> dict:
    path, target, _ = DATASETS[dataset]
    frame = pd.read_csv(REPO / path)
    smiles = frame["smiles"].tolist()
    split = make_split("scaffold", smiles, (0.8, 0.1, 0.1), seed)  # as `molprop train` does
    out = out_root / f"{dataset}_seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "data.csv"  # chemprop reads plain CSV only
    frame.to_csv(csv, index=False)
    splits_file = out / "splits.json"
    splits_file.write_text(
        json.dumps([{k: [int(i) for i in getattr(split, k)] for k in ("train", "val", "test")}])
    )
    cmd = [
        str(VENV_BIN / "chemprop"),
        "train",
        "-i",
        str(csv),
        "-s",
        "smiles",
        "--target-columns",
        target,
        "-t",
        "regression",
        "--splits-file",
        str(splits_file),
        "--epochs",
        str(epochs),
        "-o",
        str(out / "model"),
        "--num-workers",
        "0",
        "--accelerator",
        "cpu",
        "--devices",
        "1",
        "--pytorch-seed",
        str(seed),
        "--data-seed",
        str(seed),
    ]
    start = time.perf_counter()
    proc = run_process(cmd, env=chemprop_env(1))
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    wall = time.perf_counter() - start
    preds = pd.read_csv(out / "model" / "model_0" / "test_predictions.csv")
    truth = frame.iloc[list(split.test)].reset_index(drop=True)
    if preds["smiles"].tolist() != truth["smiles"].tolist():
        raise RuntimeError("chemprop test predictions are not in split order")
    test = compute_metrics(
        truth[target].to_numpy()[:, None], preds[target].to_numpy()[:, None], "regression"
    )
    return {
        "dataset": dataset,
        "seed": seed,
        "model": "chemprop v2 (defaults)",
        "epochs": epochs,
        "wall_s": round(wall, 1),
        "cpu_s": round(proc.cpu_seconds, 1),
        "test": test,
        "n_test": len(split.test),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["esol"], choices=list(DATASETS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--out", default="/tmp/molprop_core_chemprop")
    ap.add_argument("--results", default=str(REPO / "docs/results/core_chemprop.json"))
    args = ap.parse_args()
    res = Path(args.results)
    rows = json.loads(res.read_text()) if res.exists() else []
    done = {(r["dataset"], r["seed"]) for r in rows}
    for ds in args.datasets:
        for seed in args.seeds:
            if (ds, seed) not in done:
                rows.append(run(ds, seed, Path(args.out), args.epochs))
                print(json.dumps(rows[-1]), flush=True)
                res.write_text(json.dumps(rows, indent=2))
    for ds in args.datasets:
        t = np.array([r["test"]["rmse"] for r in rows if r["dataset"] == ds])
        print(
            f"{ds}: chemprop test RMSE {t.mean():.3f} ± {t.std(ddof=1) if len(t) > 1 else 0:.3f} "
            f"({' / '.join(f'{x:.3f}' for x in t)})"
        )


if __name__ == "__main__":
    main()
