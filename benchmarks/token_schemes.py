"""Directed vs undirected ESA bond tokens (a lever for the default's speed): ``--preset small``
models trained on ESOL and FreeSolv, scaffold splits seeded by the run's seed (the same split
for both schemes of a seed: paired), one member each; validation and test RMSE and the CPU
seconds of training. The result is rewritten after every run, so an interrupted run keeps
what it measured.

Usage: ``python -m benchmarks.token_schemes [--datasets ESOL FreeSolv] [--seeds 0 1 2]
[--epochs 40] [--patience 10] [--result NAME]``. Writes ``results/token_schemes.json``
(or ``results/NAME.json``: several processes, one per dataset).
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from benchmarks.common import DATASETS, save_result
from molprop.models.config import PRESETS, TrainConfig
from molprop.training.train import TrainRequest, run_train

log = logging.getLogger(__name__)


def summarise(runs: list[dict]) -> dict:
    out: dict = {}
    for ds in sorted({r["dataset"] for r in runs}):
        out[ds] = {}
        for scheme in ("directed", "undirected"):
            sel = [r for r in runs if r["dataset"] == ds and r["scheme"] == scheme]
            if sel:
                out[ds][scheme] = {
                    k: [round(float(np.mean([r[k] for r in sel])), 4), len(sel)]
                    for k in ("val_rmse", "test_rmse", "cpu_s", "epochs_run")
                }
        pairs = [
            (d, u)
            for d in runs
            for u in runs
            if d["dataset"] == u["dataset"] == ds
            and d["seed"] == u["seed"]
            and (d["scheme"], u["scheme"]) == ("directed", "undirected")
        ]
        out[ds]["undirected_better_test_pairs"] = [
            sum(u["test_rmse"] < d["test_rmse"] for d, u in pairs),
            len(pairs),
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["ESOL", "FreeSolv"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--patience", type=int, default=10)
    parser.add_argument("--work", default="/tmp/molprop_token_schemes")
    parser.add_argument("--result", default="token_schemes", help="results/<name>.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import torch

    torch.set_num_threads(1)
    small = PRESETS["small"]
    runs: list[dict] = []
    for name in args.datasets:
        spec = DATASETS[name]
        for seed in args.seeds:
            for scheme in ("directed", "undirected"):
                cpu0 = time.process_time()
                result = run_train(
                    TrainRequest(
                        data=spec.path,
                        smiles_column=spec.smiles_column,
                        target_columns=[spec.target_column],
                        out=f"{args.work}/{name}_{scheme}_{seed}",
                        model={**small["model"], "token_scheme": scheme},
                        train=TrainConfig(
                            **small["train"],
                            epochs=args.epochs,
                            patience=args.patience,
                            seed=seed,
                        ),
                        progress=False,
                    )
                )
                runs.append(
                    {
                        "dataset": name,
                        "scheme": scheme,
                        "seed": seed,
                        "val_rmse": result.ensemble("val")["rmse"],
                        "test_rmse": result.ensemble("test")["rmse"],
                        "cpu_s": round(time.process_time() - cpu0, 1),
                        "epochs_run": result.summaries[0]["epochs_run"],
                    }
                )
                log.info("%s", runs[-1])
                save_result(
                    args.result,
                    {
                        "preset": "small",
                        "epochs": args.epochs,
                        "patience": args.patience,
                        "split": "scaffold, seeded by the run seed",
                        "threads": 1,
                        "runs": runs,
                        "summary": summarise(runs),
                    },
                )


if __name__ == "__main__":
    main()
