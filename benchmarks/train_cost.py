"""Training cost on Lipophilicity: seconds per epoch and peak RSS for each model.

Each model is trained twice as a whole process on the seed-0 scaffold split, for E1 and E2
epochs with early stopping disabled; seconds per epoch = (wall(E2) - wall(E1)) / (E2 - E1), which
removes start-up, featurisation and evaluation and counts one epoch of training + validation.
Peak RSS is that of the E2 run. One thread each. (chemprop runs with ``--warmup-epochs 0`` so that
1-epoch runs are allowed; that changes its LR schedule, not its cost.)

``molprop_esa_qm9``: the default ESA on one QM9 part (``data/qm9/qm9_3d_shuffled_part01of18``,
7,269 molecules with B3LYP geometries, 3D featuriser: all atoms incl. H, radius graph 5 Å,
<= 12 neighbours; target HOMO-LUMO gap; random 80/10/10 split), timed with ``--qm9-epochs``.

Usage: ``python -m benchmarks.train_cost --epochs 1 3``. ``--models A B`` reruns only those
models and keeps the other models' entries of the result file (each entry records when it was
measured and the machine load then).
"""

from __future__ import annotations

import argparse
import logging
import shutil

from benchmarks.accuracy import MOLPROP_FLAGS, run_chemprop, run_molprop, run_pyg
from benchmarks.common import (
    REPO,
    VENV_BIN,
    WORK,
    load_result,
    machine_facts,
    run_process,
    save_result,
    thread_env,
)
from benchmarks.splits import prepare

log = logging.getLogger(__name__)
MODELS = (
    "molprop_esa",
    "molprop_esa_wide",
    "molprop_esa_hpopt_t1",
    "molprop_esa_small",
    "molprop_esa_prev",
    "chemprop",
    "gin",
    "pna",
    "molprop_esa_qm9",
)
QM9_PART = REPO / "data" / "qm9" / "qm9_3d_shuffled_part01of18.extxyz.gz"


def run_molprop_qm9(epochs: int, out, threads: int):
    cmd = [
        str(VENV_BIN / "molprop"),
        "train",
        "--data",
        str(QM9_PART),
        "--featurizer",
        "3d",
        "--target-columns",
        "HOMO_LUMO_gap_au",
        "--split-type",
        "random",
        "--epochs",
        str(epochs),
        "--patience",
        str(epochs + 1),
        "--seed",
        "0",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = run_process(cmd, env=thread_env(threads))
    if proc.returncode != 0:
        raise RuntimeError(f"molprop (QM9 3D) failed: {proc.stderr[-2000:]}")
    return proc


def timed_run(model: str, name: str, epochs: int, threads: int) -> tuple[float, float, float]:
    out = WORK / "train_cost" / f"{model}_{epochs}"
    shutil.rmtree(out, ignore_errors=True)
    patience = epochs + 1
    if model == "molprop_esa_qm9":
        proc = run_molprop_qm9(epochs, out, threads)
    elif model in MOLPROP_FLAGS:
        _, proc, _, _ = run_molprop(name, 0, epochs, patience, out, threads, MOLPROP_FLAGS[model])
    elif model == "chemprop":
        _, proc, _, _ = run_chemprop(
            name, 0, epochs, patience, out, threads, extra=["--warmup-epochs", "0"]
        )
    else:
        _, proc, _, _ = run_pyg(model, name, 0, epochs, patience, out, threads)
    return proc.seconds, proc.peak_rss_mb, proc.cpu_seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", default="Lipophilicity")
    p.add_argument("--epochs", nargs=2, type=int, default=[1, 3])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument(
        "--qm9-epochs",
        nargs=2,
        type=int,
        default=[1, 2],
        help="epoch pair for molprop_esa_qm9 (its epochs are ~10x Lipophilicity's)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--result-name", default="train_cost", help="results/<name>.json")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    prepare(args.dataset, [0])
    previous = load_result(args.result_name) or {}
    same = (previous.get("dataset"), previous.get("threads")) == (args.dataset, args.threads)
    results = {
        m: r
        for m, r in previous.get("models", {}).items()
        if same and m in MODELS and m not in args.models
    }
    for model in args.models:
        e1, e2 = args.qm9_epochs if model == "molprop_esa_qm9" else args.epochs
        w1, _, c1 = timed_run(model, args.dataset, e1, args.threads)
        w2, rss, c2 = timed_run(model, args.dataset, e2, args.threads)
        facts = machine_facts()
        results[model] = {
            "epochs": [e1, e2],
            "wall_e1": round(w1, 1),
            "wall_e2": round(w2, 1),
            "seconds_per_epoch": round((w2 - w1) / (e2 - e1), 2),
            "cpu_seconds_per_epoch": round((c2 - c1) / (e2 - e1), 2),
            "peak_rss_mb": round(rss, 1),
            "measured_utc": facts["time_utc"],
            "load_avg_1min": facts["load_avg_1_5_15"][0],
        }
        log.info("%s: %s", model, results[model])
        save_result(
            args.result_name,
            {
                "dataset": args.dataset,
                "epochs": args.epochs,
                "threads": args.threads,
                "models": results,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
