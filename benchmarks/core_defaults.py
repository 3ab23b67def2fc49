"""Measurement of the ESA's former default (:data:`RECIPE`) on ESOL and FreeSolv, scaffold split,
seeds 0-2; test RMSE mean ± sd and training wall time, for docs/results/core.md (writes
docs/results/core_defaults.json and core_table.md).

    python -m benchmarks.core_defaults [--seeds 0 1 2] [--datasets esol freesolv]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: the flags every run starts from: the default the committed tables measured (before the
#: `small` default), spelled out with today's flags (decay on every parameter: the only
#: behaviour then)
RECIPE = ("--preset", "wide", "--weight-decay-on", "all")
DATASETS = {
    "esol": ("data/moleculenet/delaney_chemprop.csv.gz", "logp", "log mol/L"),
    "freesolv": ("data/moleculenet/freesolv_chemprop.csv.gz", "freesolv", "kcal/mol"),
}


def run(dataset: str, seed: int, out_root: Path, flags: Sequence[str] = (), tag: str = "") -> dict:
    """``molprop train`` with :data:`RECIPE` (plus ``flags``) on one dataset and seed; wall
    and CPU seconds of the training process, test / val metrics, epochs run."""
    path, target, _ = DATASETS[dataset]
    out = out_root / f"{dataset}{'_' + tag if tag else ''}_seed{seed}"
    cmd = [
        sys.executable,
        "-m",
        "molprop.cli.main",
        "train",
        "--data",
        str(REPO / path),
        "--smiles-column",
        "smiles",
        "--target-columns",
        target,
        "--seed",
        str(seed),
        "--no-progress",
        "--out",
        str(out),
        "--init",
        "none",
        *RECIPE,
        *flags,
    ]
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    metrics = json.loads((out / "metrics.json").read_text())
    return {
        "dataset": dataset,
        "seed": seed,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "cmd": " ".join(cmd[1:]),
        "test": metrics["test"]["ensemble"],
        "val": metrics["val"]["ensemble"],
        "epochs": metrics["training"]["members"][0]["epochs_run"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--out", default="/tmp/molprop_core_defaults")
    args = ap.parse_args()
    rows = []
    for ds in args.datasets:
        for seed in args.seeds:
            rows.append(run(ds, seed, Path(args.out)))
            print(json.dumps(rows[-1]), flush=True)
    (REPO / "docs/results").mkdir(parents=True, exist_ok=True)
    (REPO / "docs/results/core_defaults.json").write_text(json.dumps(rows, indent=2))
    lines = [
        "| dataset | test RMSE (mean ± sd) | test MAE | test R² | wall time per model (s) | epochs run |",
        "|---|---|---|---|---|---|",
    ]
    for ds in args.datasets:
        r = [x for x in rows if x["dataset"] == ds]
        rmse = np.array([x["test"]["rmse"] for x in r])
        mae = np.array([x["test"]["mae"] for x in r])
        r2 = np.array([x["test"]["r2"] for x in r])
        wall = np.array([x["wall_s"] for x in r])
        lines.append(
            f"| {ds} ({DATASETS[ds][2]}) | {rmse.mean():.3f} ± {rmse.std(ddof=1) if len(r) > 1 else 0:.3f} "
            f"| {mae.mean():.3f} | {r2.mean():.3f} | {wall.mean():.0f} ({wall.min():.0f}-{wall.max():.0f}) "
            f"| {', '.join(str(x['epochs']) for x in r)} |"
        )
    print("\n".join(lines))
    (REPO / "docs/results/core_table.md").write_text(
        "\n".join(lines) + f"\n\nmachine: {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}\n"
    )


if __name__ == "__main__":
    main()
