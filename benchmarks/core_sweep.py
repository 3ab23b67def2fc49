"""Defaults sweep: a few candidate default settings of the ESA, each trained with the
CLI on ESOL (scaffold split) over several seeds; writes docs/results/core_sweep.{md,json}.

    python -m benchmarks.core_sweep [--seeds 0 1 2] [--configs default lr3e-4 ...]

Every run is `molprop train --data ... --target-columns logp --seed S` with the defaults of the
time (:data:`BASE`: `benchmarks.core_defaults.RECIPE` with dropout 0.1 and raw weights) plus the
config's flags, so the winner could be made the default by changing the defaults only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.core_defaults import DATASETS, REPO
from benchmarks.core_defaults import run as run_train

#: the defaults the sweep compared against (docs/results/core.md, "Earlier defaults")
BASE = ["--dropout", "0.1", "--ema-epochs", "0"]

CONFIGS = {
    "default": [],
    "no-size-linear": ["--no-size-linear"],
    "lr3e-4": ["--lr", "3e-4"],
    "hidden64": ["--hidden-dim", "64"],
    "dropout0": ["--dropout", "0"],
    "hidden64-lr3e-4": ["--hidden-dim", "64", "--lr", "3e-4"],
    "batch16": ["--batch-size", "16"],
}


def run(dataset: str, config: str, seed: int, out_root: Path) -> dict:
    row = run_train(dataset, seed, out_root, [*BASE, *CONFIGS[config]], tag=config)
    return {"dataset": dataset, "config": config, "flags": CONFIGS[config], **row}


def table(rows: list[dict]) -> str:
    lines = [
        "| dataset | config | flags | test RMSE mean ± sd | per seed | val RMSE mean | wall s/model | epochs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = dict.fromkeys((r["dataset"], r["config"]) for r in rows)
    for ds, cfg in keys:
        r = [x for x in rows if x["dataset"] == ds and x["config"] == cfg]
        t = np.array([x["test"]["rmse"] for x in r])
        v = np.array([x["val"]["rmse"] for x in r])
        sd = t.std(ddof=1) if len(t) > 1 else 0.0
        lines.append(
            f"| {ds} | {cfg} | `{' '.join(CONFIGS[cfg]) or '(none)'}` | {t.mean():.3f} ± {sd:.3f} "
            f"| {' / '.join(f'{x:.3f}' for x in t)} | {v.mean():.3f} "
            f"| {np.mean([x['wall_s'] for x in r]):.0f} | {', '.join(str(x['epochs']) for x in r)} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--datasets", nargs="+", default=["esol"], choices=list(DATASETS))
    ap.add_argument("--out", default="/tmp/molprop_core_sweep")
    ap.add_argument("--results", default=str(REPO / "docs/results/core_sweep.json"))
    args = ap.parse_args()
    res = Path(args.results)
    rows = json.loads(res.read_text()) if res.exists() else []
    done = {(r["dataset"], r["config"], r["seed"]) for r in rows}
    for ds in args.datasets:
        for cfg in args.configs:
            for seed in args.seeds:
                if (ds, cfg, seed) in done:
                    continue
                rows.append(run(ds, cfg, seed, Path(args.out)))
                print(json.dumps(rows[-1]), flush=True)
                res.write_text(json.dumps(rows, indent=2))
                res.with_suffix(".md").write_text(table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
