"""Accuracy: molprop ESA (CLI defaults) vs chemprop v2 (its CLI) vs PyG GIN and PNA.

Every model sees the same cleaned table and the same scaffold split indices
(``benchmarks.splits``), the same epoch budget and early-stopping patience on validation loss,
one thread each, and is scored on the test part by the same metric code
(``molprop.training.metrics``). Each run is a whole subprocess; wall time and peak RSS are kept.

Full grid (5 datasets x 3 seeds x 4 models): ``python -m benchmarks.accuracy --all``
Cut grid:  ``python -m benchmarks.accuracy --datasets ESOL FreeSolv --seeds 0 --epochs 30``
Results accumulate in ``benchmarks/results/accuracy.json`` (finished runs are skipped).
``--jobs N`` runs N subprocesses at once (each with ``--threads`` threads); runs are ordered
ESA (default and small) and chemprop first (all datasets and seeds), then GIN and PNA, so a grid
cut short still holds the headline comparison.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import (
    BENCH,
    DATASETS,
    VENV_BIN,
    WORK,
    chemprop_env,
    load_result,
    run_process,
    save_result,
    thread_env,
)
from benchmarks.splits import data_path, molprop_table_args, prepare, seed_csv_path, split_path
from molprop.models.config import PRESETS, ModelConfig, TrainConfig
from molprop.training.metrics import compute_metrics

log = logging.getLogger(__name__)
MODELS = (
    "molprop_esa",
    "molprop_esa_wide",
    "molprop_esa_hpopt_t1",
    "molprop_esa_small",
    "molprop_esa_prev",
    "molprop_esa_small_prev",
    "molprop_esa_decay_matrices",
    "molprop_esa_decay_all",
    "molprop_esa_foundation",
    "chemprop",
    "gin",
    "pna",
)
#: Every molprop model of the grid is a random start (``--init none``, added by
#: :func:`run_molprop`) except ``molprop_esa_foundation``, which names its start.
#: ``molprop_esa``: ``molprop train --init none`` with no preset (the ``default`` preset in
#: force now; ``molprop train``'s default before the foundation start);
#: ``molprop_esa_wide``: ``--preset wide``, the former default (hidden 128, 8 heads,
#: ``MSMSMP S``, 32 seeds, batch 32, lr 1e-4): the grid's runs before the ``molprop hpopt``
#: search for a new default were made as ``molprop_esa`` with those defaults and are stored
#: under this name.
#: ``molprop_esa_small``: ``molprop train --preset small`` (molprop.models.config.PRESETS: the
#: shipped models' architecture, one member: hidden 64, 4 heads, ``MSMSP S``, 8 seeds, no
#: dropout, batch 64, lr 5e-4)
SMALL_FLAGS = ["--preset", "small"]
#: ``molprop_esa_prev``: the earlier defaults (dropout 0.1, validation on the raw
#: weights, weight decay on every parameter), to measure what the new defaults (no dropout,
#: weight averaging) changed
PREV_FLAGS = ["--dropout", "0.1", "--ema-epochs", "0", "--weight-decay-on", "all"]
#: extra ``molprop train`` flags of each molprop model in the grid
MOLPROP_FLAGS = {
    "molprop_esa": [],
    "molprop_esa_wide": ["--preset", "wide"],
    # the best trial of the default search's Lipophilicity study
    # (docs/results/default_search.md): more accurate on validation than the default, above
    # the cost cap
    "molprop_esa_hpopt_t1": [
        "--preset",
        str(BENCH / "hpopt" / "lipophilicity_default_search" / "best_preset.json"),
    ],
    "molprop_esa_small": SMALL_FLAGS,
    "molprop_esa_prev": PREV_FLAGS,
    "molprop_esa_small_prev": SMALL_FLAGS + ["--ema-epochs", "0", "--weight-decay-on", "all"],
    # AdamW decay on Linear weight matrices only vs on every parameter (the old way)
    "molprop_esa_decay_matrices": ["--weight-decay-on", "matrices"],
    "molprop_esa_decay_all": ["--weight-decay-on", "all"],
    # a new task from the shipped foundation backbone (its architecture, the default training):
    # what ``molprop train`` with no flags does on these 2D tasks (``--init auto``)
    "molprop_esa_foundation": ["--init", "foundation"],
}
HEADLINE = ("molprop_esa", "molprop_esa_small", "chemprop")
#: variants run only when named in ``--models`` (results/adamw_groups.json, benchmarks/notes.md)
ABLATIONS = (
    "molprop_esa_decay_matrices",
    "molprop_esa_decay_all",
    "molprop_esa_hpopt_t1",
    "molprop_esa_foundation",
)


def molprop_defaults() -> dict:
    """ModelConfig / TrainConfig settings ``molprop train`` uses with no flags: the dataclass
    defaults under the ``default`` preset."""
    model = {
        f.name: f.default
        for f in fields(ModelConfig)
        if f.name not in ("node_dim", "edge_dim", "n_tasks", "n_extra")
    }
    preset = PRESETS["default"]
    return {
        "model": {**model, **preset["model"]},
        "train": TrainConfig(**preset["train"]).to_dict(),
    }


def run_molprop(
    name: str,
    seed: int,
    epochs: int,
    patience: int,
    out: Path,
    threads: int,
    extra: list[str] | None = None,
):
    cmd = [
        str(VENV_BIN / "molprop"),
        "train",
        *molprop_table_args(name, seed),
        "--epochs",
        str(epochs),
        "--patience",
        str(patience),
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--no-progress",
    ] + (extra or [])
    if "--init" not in cmd:
        cmd += ["--init", "none"]  # a random start unless the model names its start
    proc = run_process(cmd, env=thread_env(threads))
    if proc.returncode != 0:
        raise RuntimeError(f"molprop failed: {proc.stderr[-2000:]}")
    metrics = json.loads((out / "metrics.json").read_text())
    member = metrics["training"]["members"][0]
    return metrics["test"]["ensemble"], proc, member["epochs_run"], member["best_epoch"]


def molprop_run_config(out: Path) -> dict:
    """Model + train settings a molprop run actually used (from its artifact's config.json)."""
    config = json.loads((out / "config.json").read_text())
    return {"model": config["model"], "train": config["train"]}


def chemprop_test_metrics(name: str, seed: int, out: Path) -> dict:
    """Score chemprop's ``test_predictions.csv`` with molprop's metric code (row order checked)."""
    spec = DATASETS[name]
    frame = pd.read_csv(data_path(name))
    test_idx = json.loads(split_path(name, seed).read_text())[0]["test"]
    preds = pd.read_csv(out / "model_0" / "test_predictions.csv")
    truth = frame.iloc[test_idx].reset_index(drop=True)
    if preds["smiles"].tolist() != truth["smiles"].tolist():
        raise RuntimeError("chemprop test predictions are not in split order")
    return compute_metrics(
        truth["target"].to_numpy()[:, None], preds["target"].to_numpy()[:, None], spec.task_type
    )


def run_chemprop(
    name: str,
    seed: int,
    epochs: int,
    patience: int,
    out: Path,
    threads: int,
    extra: list[str] | None = None,
):
    spec = DATASETS[name]
    metrics = ["rmse", "r2"] if spec.task_type == "regression" else ["roc", "binary-mcc"]
    cmd = [
        str(VENV_BIN / "chemprop"),
        "train",
        "-i",
        str(data_path(name)),
        "-s",
        "smiles",
        "--target-columns",
        "target",
        "-t",
        spec.task_type,
        "--splits-file",
        str(split_path(name, seed)),
        "--epochs",
        str(epochs),
        "--patience",
        str(patience),
        "--tracking-metric",
        "val_loss",
        "--metrics",
        *metrics,
        "-o",
        str(out),
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
        *(extra or []),
    ]
    proc = run_process(cmd, env=chemprop_env(threads))
    if proc.returncode != 0:
        raise RuntimeError(f"chemprop failed: {proc.stderr[-2000:]}")
    log_csv = pd.read_csv(out / "model_0" / "trainer_logs" / "version_0" / "metrics.csv")
    val = log_csv.dropna(subset=["val_loss"])
    epochs_run = int(val["epoch"].max()) + 1
    best_epoch = int(val.loc[val["val_loss"].idxmin(), "epoch"])
    return chemprop_test_metrics(name, seed, out), proc, epochs_run, best_epoch


def run_pyg(model: str, name: str, seed: int, epochs: int, patience: int, out: Path, threads: int):
    spec = DATASETS[name]
    out.mkdir(parents=True, exist_ok=True)
    hidden = "64" if model == "pna" else "128"
    cmd = [
        str(VENV_BIN / "python"),
        "-m",
        "benchmarks.pyg_baselines",
        "--csv",
        str(seed_csv_path(name, seed)),
        "--model",
        model,
        "--task-type",
        spec.task_type,
        "--epochs",
        str(epochs),
        "--patience",
        str(patience),
        "--seed",
        str(seed),
        "--hidden",
        hidden,
        "--out",
        str(out / "metrics.json"),
    ]
    proc = run_process(cmd, env=thread_env(threads))
    if proc.returncode != 0:
        raise RuntimeError(f"{model} failed: {proc.stderr[-2000:]}")
    res = json.loads((out / "metrics.json").read_text())
    return res["test"], proc, res["epochs_run"], res["best_epoch"]


def run_one(model: str, name: str, seed: int, epochs: int, patience: int, threads: int) -> dict:
    out = WORK / "accuracy" / f"{name}_seed{seed}_{model}"
    shutil.rmtree(out, ignore_errors=True)
    if model in MOLPROP_FLAGS:
        test, proc, epochs_run, best = run_molprop(
            name, seed, epochs, patience, out, threads, MOLPROP_FLAGS[model]
        )
    elif model == "chemprop":
        test, proc, epochs_run, best = run_chemprop(name, seed, epochs, patience, out, threads)
    else:
        test, proc, epochs_run, best = run_pyg(model, name, seed, epochs, patience, out, threads)
    config = molprop_run_config(out) if model in MOLPROP_FLAGS else None
    return {
        "dataset": name,
        "seed": seed,
        "model": model,
        "test": test,
        "config": config,
        "epochs_run": epochs_run,
        "best_epoch": best,
        "wall_seconds": round(proc.seconds, 1),
        "cpu_seconds": round(proc.cpu_seconds, 1),
        "peak_rss_mb": round(proc.peak_rss_mb, 1),
    }


def summarise(runs: list[dict]) -> list[dict]:
    """Mean and std over seeds of each headline metric per (dataset, model)."""
    rows = []
    frame = pd.DataFrame(runs)
    for (name, model), group in frame.groupby(["dataset", "model"], sort=False):
        row = {"dataset": name, "model": model, "n_seeds": len(group)}
        for metric in DATASETS[name].metrics:
            vals = np.asarray([t[metric] for t in group["test"]], dtype=float)
            row[metric] = float(vals.mean())
            row[metric + "_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else float("nan")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["ESOL", "FreeSolv"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument(
        "--models",
        nargs="+",
        default=[m for m in MODELS if m not in ABLATIONS],
        choices=MODELS,
        help="default: all but the ablations (molprop_esa_decay_*), run only when named",
    )
    p.add_argument("--all", action="store_true", help="full grid: 5 datasets x seeds 0 1 2")
    p.add_argument("--epochs", type=int, default=30, help="epoch budget for every model")
    p.add_argument("--patience", type=int, default=10, help="early stopping patience (val loss)")
    p.add_argument("--threads", type=int, default=1, help="OMP threads per run")
    p.add_argument("--rerun", action="store_true", help="ignore finished runs in accuracy.json")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (each its own process)")
    p.add_argument(
        "--result-name",
        default="accuracy",
        help="results/<name>.json (another name keeps extra runs, e.g. more seeds, "
        "out of the grid that RESULTS.md reports)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.all:
        args.datasets, args.seeds = list(DATASETS), [0, 1, 2]
    previous = load_result(args.result_name) or {}
    runs = [] if args.rerun else previous.get("runs", [])
    settings = {"epochs": args.epochs, "patience": args.patience, "threads": args.threads}
    if runs and previous.get("settings") != settings:
        raise SystemExit(
            f"accuracy.json holds runs made with {previous.get('settings')}; "
            f"use the same settings or --rerun"
        )
    done = {(r["dataset"], r["seed"], r["model"]) for r in runs}
    for name in args.datasets:
        prepare(name, args.seeds)
    groups = (
        [m for m in MODELS if m in args.models and m in HEADLINE],
        [m for m in MODELS if m in args.models and m not in HEADLINE],
    )
    todo = [
        (name, seed, model)
        for group in groups
        for seed in args.seeds
        for name in args.datasets
        for model in group
        if (name, seed, model) not in done
    ]
    lock = threading.Lock()

    def work(key: tuple[str, int, str]) -> None:
        name, seed, model = key
        log.info("accuracy: %s seed %d %s", name, seed, model)
        result = run_one(model, name, seed, args.epochs, args.patience, args.threads)
        log.info(
            "  %s seed %d %s -> %s (%.0f s)",
            name,
            seed,
            model,
            result["test"],
            result["wall_seconds"],
        )
        with lock:
            runs.append(result)
            save_result(
                args.result_name,
                {
                    "settings": settings,
                    "molprop_defaults": molprop_defaults(),
                    "runs": runs,
                    "summary": summarise(runs),
                },
            )

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(work, key) for key in todo]:
            future.result()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
