"""Step 4-5 of docs/results/default_search.md: candidate defaults scored on validation data only.

Each candidate (a preset: ``{"model": {...}, "train": {...}}``, e.g. from a trial of the
Lipophilicity study) is trained once per (dataset, split seed) by ``molprop hpopt`` restricted
to that one configuration (a search space with a single value per setting), so exactly the
search's objective is used -- best validation loss, train and validation parts of the grid's
split, the test rows never loaded. The choice: lowest geometric mean over the datasets of
validation loss / the control's (mean over a dataset's split seeds).

    python -m benchmarks.default_candidates --candidates small=small t12=trial:12 \\
        --study /work/hpopt-default-search/lipo.db:lipo --datasets ESOL FreeSolv --seeds 0 1 --jobs 2

(``NAME=small``: a named preset; ``NAME=trial:N``: trial N of ``--study``; ``NAME=FILE``: a
preset file.) Results: ``benchmarks/results/default_candidates.json`` (runs accumulate; a finished
(candidate, dataset, seed) is not rerun).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from benchmarks.common import VENV_BIN, WORK, load_result, run_process, save_result, thread_env
from benchmarks.splits import molprop_table_args, prepare
from molprop.cli.options import preset_values
from molprop.models.config import PRESETS, check_preset

log = logging.getLogger(__name__)
RESULT = "default_candidates"


def resolve(spec: str, study: str | None) -> tuple[dict, dict | None]:
    """A preset from ``small`` (name), ``trial:N`` (a trial of the study) or a JSON file (as
    ``--preset`` reads them), and for a trial its own score on the study's data (validation
    loss, CPU s per epoch: its row of the hpopt trials table)."""
    if not spec.startswith("trial:"):
        return preset_values(spec), None
    import optuna

    from molprop.training.hpopt_report import trials_frame

    if not study:
        raise SystemExit("trial:N needs --study DB:NAME")
    db, name = study.rsplit(":", 1)
    loaded = optuna.load_study(study_name=name, storage=f"sqlite:///{db}")
    number = int(spec.split(":", 1)[1])
    row = trials_frame(loaded).set_index("trial").loc[number]
    scored = {
        "val_loss": float(row["val_loss"]),
        "epochs": int(row["epochs_reported"]),
        "cpu_s_per_epoch": float(row["cpu_s_per_epoch"]),
        "trial": number,
        "study": study,
    }
    return check_preset(loaded.trials[number].user_attrs["preset"], spec), scored


def fixed_space(preset: dict) -> dict:
    """The search space whose only point is ``preset`` (settings it leaves out: the CLI
    default preset's value, else the dataclass default, as ``molprop train`` would use)."""
    from dataclasses import fields

    from molprop.models.config import ModelConfig, TrainConfig

    base_model = {f.name: f.default for f in fields(ModelConfig)}
    base_train = TrainConfig().to_dict()
    model = {**base_model, **PRESETS["default"]["model"], **preset["model"]}
    train = {**base_train, **PRESETS["default"]["train"], **preset["train"]}
    space = {
        "hidden_dim": [model["hidden_dim"]],
        "heads": [model["heads"]],
        "layers": [model["layers"]],
        "num_seeds": [model["num_seeds"]],
        "dropout": [model["dropout"], model["dropout"]],
        "token_scheme": [model["token_scheme"]],
        "lr": [train["lr"], train["lr"]],
        "batch_size": [train["batch_size"]],
        "schedule": [train["schedule"]],
    }
    if train["schedule"] == "warmup_decay":
        space["warmup_epochs"] = [train["warmup_epochs"]]
    return space


def run_candidate(name: str, preset: dict, dataset: str, seed: int, epochs: int, patience: int):
    out = WORK / "default_candidates" / f"{name}_{dataset}_seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "space.json").write_text(json.dumps(fixed_space(preset)))
    db = out / "study.db"
    db.unlink(missing_ok=True)
    cmd = [
        str(VENV_BIN / "molprop"),
        "hpopt",
        *molprop_table_args(dataset, seed),
        "--out",
        str(out),
        "--storage",
        str(db),
        "--study-name",
        "candidate",
        "--space",
        str(out / "space.json"),
        *f"--epochs {epochs} --patience {patience} --seed {seed}".split(),
        "--trials",
        "1",
        "--no-progress",
    ]
    proc = run_process(cmd, env=thread_env(1))
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {dataset} seed {seed}: {proc.stderr[-2000:]}")
    row = pd.read_csv(out / "trials.csv").iloc[0]
    return {
        "candidate": name,
        "preset": preset,
        "dataset": dataset,
        "seed": seed,
        "val_loss": float(row["val_loss"]),
        "epochs": int(row["epochs_reported"]),
        "cpu_s_per_epoch": float(row["cpu_s_per_epoch"]),
        "wall_seconds": round(proc.seconds, 1),
        "cpu_seconds": round(proc.cpu_seconds, 1),
    }


def choose(runs: list[dict], control: str, study_dataset: str, cost_cap: float) -> dict:
    """Per candidate: mean validation loss per dataset, ratio to the control, geometric mean;
    the cost on the study's dataset (CPU s per epoch / the control's, both measured with the
    other core busy). The choice: the lowest geometric mean below 1 among the candidates within
    ``cost_cap``, else the control; ``choice_without_cost_cap`` says what accuracy alone picks."""
    frame = pd.DataFrame(runs)
    means = frame.groupby(["candidate", "dataset"])["val_loss"].mean().unstack()
    ratios = means.div(means.loc[control], axis=1)
    geo = ratios.apply(lambda r: math.exp(float(np.log(r.dropna()).mean())), axis=1)
    on_study = frame[frame["dataset"] == study_dataset].groupby("candidate")["cpu_s_per_epoch"]
    cost = on_study.mean() / on_study.mean()[control]
    eligible = [c for c in geo.index if c in cost.index and cost[c] <= cost_cap]
    best = min(eligible, key=lambda c: geo[c])
    free = str(geo.idxmin())
    return {
        "val_loss": means.to_dict(orient="index"),
        "ratio_to_control": ratios.to_dict(orient="index"),
        "geometric_mean_ratio": geo.to_dict(),
        "cost_ratio_to_control": cost.to_dict(),
        "cost_cap": cost_cap,
        "within_cost_cap": eligible,
        "choice": best if geo[best] < 1 else control,
        "choice_without_cost_cap": free if geo[free] < 1 else control,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--candidates", nargs="+", required=True, help="NAME=small|trial:N|FILE")
    p.add_argument("--control", default="small")
    p.add_argument("--study", default=None, help="SQLite file:study name of trial:N candidates")
    p.add_argument(
        "--study-dataset",
        default="Lipophilicity",
        help="dataset of --study: a trial's own score there is the candidate's (seed -1 row)",
    )
    p.add_argument("--datasets", nargs="+", default=["ESOL", "FreeSolv"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--patience", type=int, default=10)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument(
        "--cost-cap",
        type=float,
        default=8.5 / 6.9,
        help="most CPU s per epoch relative to the control on the study's dataset (default: "
        "chemprop / small on the idle machine, 8.5 / 6.9)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    candidates = dict(c.split("=", 1) for c in args.candidates)
    resolved = {name: resolve(spec, args.study) for name, spec in candidates.items()}
    presets = {name: preset for name, (preset, _) in resolved.items()}
    previous = load_result(RESULT) or {}
    runs = previous.get("runs", [])
    have = {(r["candidate"], r["dataset"], r["seed"]) for r in runs}
    for name, (preset, scored) in resolved.items():  # a trial's own run on the study's data
        if scored and (name, args.study_dataset, -1) not in have:
            runs.append(
                {"candidate": name, "preset": preset, "dataset": args.study_dataset, "seed": -1}
                | scored
            )
    done = {(r["candidate"], r["dataset"], r["seed"]) for r in runs}
    for dataset in args.datasets:
        prepare(dataset, args.seeds)

    def wanted(name: str, dataset: str, seed: int) -> bool:
        # on the study's own dataset only presets without a trial there (the control) train,
        # on the study's split (seed 0): the trials' own scores stand for the others
        if dataset == args.study_dataset:
            return resolved[name][1] is None and seed == 0
        return True

    todo = [
        (name, dataset, seed)
        for seed in args.seeds
        for dataset in args.datasets
        for name in presets
        if (name, dataset, seed) not in done and wanted(name, dataset, seed)
    ]
    todo.sort(key=lambda k: k[1] != args.study_dataset)  # the long control run first
    lock = threading.Lock()

    def summarise(runs: list[dict]) -> dict | None:
        if not any(
            r["candidate"] == args.control and r["dataset"] == args.study_dataset for r in runs
        ):
            return None  # no cost reference yet
        return choose(runs, args.control, args.study_dataset, args.cost_cap)

    def work(key):
        name, dataset, seed = key
        result = run_candidate(name, presets[name], dataset, seed, args.epochs, args.patience)
        log.info("%s %s seed %d: val_loss %.4f", name, dataset, seed, result["val_loss"])
        with lock:
            runs.append(result)
            save_result(RESULT, {"runs": runs, "summary": summarise(runs)})

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(work, key) for key in todo]:
            future.result()
    summary = summarise(runs)
    save_result(RESULT, {"runs": runs, "summary": summary})
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
