"""Training cost on Lipophilicity: seconds per epoch and peak RSS for each model.

Each model is trained twice as a whole process on the seed-0 scaffold split, for E1 and E2
epochs with early stopping disabled; seconds per epoch = (wall(E2) - wall(E1)) / (E2 - E1), which
removes start-up, featurisation and evaluation and counts one epoch of training + validation.
Peak RSS is that of the E2 run. One thread each. (chemprop runs with ``--warmup-epochs 0`` so that
1-epoch runs are allowed; that changes its LR schedule, not its cost.)

Usage: ``python -m benchmarks.train_cost --epochs 1 3``
"""

from __future__ import annotations

import argparse
import logging
import shutil

from benchmarks.accuracy import run_chemprop, run_molprop, run_pyg
from benchmarks.common import WORK, save_result
from benchmarks.splits import prepare

log = logging.getLogger(__name__)
MODELS = ("molprop_esa", "chemprop", "gin", "pna")


def timed_run(model: str, name: str, epochs: int, threads: int) -> tuple[float, float]:
    out = WORK / "train_cost" / f"{model}_{epochs}"
    shutil.rmtree(out, ignore_errors=True)
    patience = epochs + 1
    if model == "molprop_esa":
        _, proc, _, _ = run_molprop(name, 0, epochs, patience, out, threads)
    elif model == "chemprop":
        _, proc, _, _ = run_chemprop(name, 0, epochs, patience, out, threads,
                                     extra=["--warmup-epochs", "0"])  # fmt: skip
    else:
        _, proc, _, _ = run_pyg(model, name, 0, epochs, patience, out, threads)
    return proc.seconds, proc.peak_rss_mb


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", default="Lipophilicity")
    p.add_argument("--epochs", nargs=2, type=int, default=[1, 3])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--result-name", default="train_cost", help="results/<name>.json")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    prepare(args.dataset, [0])
    e1, e2 = args.epochs
    results = {}
    for model in args.models:
        w1, _ = timed_run(model, args.dataset, e1, args.threads)
        w2, rss = timed_run(model, args.dataset, e2, args.threads)
        results[model] = {"wall_e1": round(w1, 1), "wall_e2": round(w2, 1),
                          "seconds_per_epoch": round((w2 - w1) / (e2 - e1), 2),
                          "peak_rss_mb": round(rss, 1)}  # fmt: skip
        log.info("%s: %s", model, results[model])
        save_result(args.result_name, {"dataset": args.dataset, "epochs": [e1, e2],
                                   "threads": args.threads, "models": results})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
