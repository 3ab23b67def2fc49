"""Hyperparameter search (Optuna): TPE sampling, median pruning per validation epoch, on the
validation split only (ESA: the token scheme is searched too).

A trial is one preset (``{"model": {...}, "train": {...}}``, the keys of
``models.config.PRESET_KEYS``) drawn from a :class:`SearchSpace`; it trains one member on the
training split and scores the best (EMA) validation loss, reported every epoch to Optuna's
median pruner through a Lightning callback. The test split is cut off before the objective is
built (:func:`search_data`): no trial trains or scores on a test row.

Storage: an SQLAlchemy URL (``sqlite:///study.db``, ``postgresql://user:pw@host/db``: many
workers on many machines), or a file path: ``*.db`` / ``*.sqlite`` -> SQLite, ``*.log`` /
``*.journal`` -> Optuna's journal file (safe for several processes on one machine). Workers
started with the same storage and study name share one study; each runs its ``n_trials``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import optuna

from molprop.errors import ConfigError
from molprop.models.config import (
    SCHEDULES,
    ModelConfig,
    TaskType,
    TrainConfig,
    check_preset,
    default_pair_rbf,
)
from molprop.training.fit import build_model, fit_member
from molprop.training.tables import (
    SplitSpec,
    TableSpec,
    load_table,
    make_task,
    split_table,
    training_datasets,
    training_targets,
)

log = logging.getLogger(__name__)

#: Optuna's own per-trial INFO lines are replaced by ours (one line per finished trial).
optuna.logging.set_verbosity(optuna.logging.WARNING)


@dataclass(frozen=True)
class SearchSpace:
    """Choices of each searched setting (categorical tuples; ``lr`` and ``dropout``: a (low,
    high) range, ``lr`` log-uniform). ``warmup_epochs`` is searched only for trials whose
    ``schedule`` is ``warmup_decay``. A JSON file narrows it (``--space``: any subset of the
    fields, lists for tuples)."""

    hidden_dim: tuple[int, ...] = (32, 64, 128)
    heads: tuple[int, ...] = (2, 4, 8)
    layers: tuple[str, ...] = ("MSP S", "MSMSP S", "MSMSMP S", "MMSSP S")
    num_seeds: tuple[int, ...] = (4, 8, 16, 32)
    lr: tuple[float, float] = (1e-4, 3e-3)
    schedule: tuple[str, ...] = SCHEDULES
    warmup_epochs: tuple[int, ...] = (1, 2, 4)
    batch_size: tuple[int, ...] = (16, 32, 64)
    dropout: tuple[float, float] = (0.0, 0.2)
    token_scheme: tuple[str, ...] = ("directed", "undirected")

    def __post_init__(self) -> None:
        for name in ("lr", "dropout"):
            low, high = getattr(self, name)
            if not low <= high:
                raise ConfigError(f"search space {name}: low {low} > high {high}")
        for s in self.schedule:
            if s not in SCHEDULES:
                raise ConfigError(f"search space schedule {s!r} not in {SCHEDULES}")
        bad = [(d, h) for d in self.hidden_dim for h in self.heads if d % h]
        if bad:
            raise ConfigError(f"search space: hidden_dim not divisible by heads for {bad}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchSpace:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"search space: unknown setting(s) {unknown} (known: {sorted(known)})"
            )
        return cls(**{k: tuple(v) for k, v in data.items()})

    def to_dict(self) -> dict[str, list]:
        return {k: list(v) for k, v in asdict(self).items()}

    def suggest(self, trial: optuna.Trial) -> dict[str, dict[str, Any]]:
        """One preset drawn for ``trial`` (a fixed setting when a range or list has one value)."""
        model = {
            "hidden_dim": trial.suggest_categorical("hidden_dim", list(self.hidden_dim)),
            "heads": trial.suggest_categorical("heads", list(self.heads)),
            "layers": trial.suggest_categorical("layers", list(self.layers)),
            "num_seeds": trial.suggest_categorical("num_seeds", list(self.num_seeds)),
            "dropout": trial.suggest_float("dropout", *self.dropout),
            "token_scheme": trial.suggest_categorical("token_scheme", list(self.token_scheme)),
        }
        train = {
            "lr": trial.suggest_float("lr", *self.lr, log=True),
            "batch_size": trial.suggest_categorical("batch_size", list(self.batch_size)),
            "schedule": trial.suggest_categorical("schedule", list(self.schedule)),
        }
        if train["schedule"] == "warmup_decay":
            train["warmup_epochs"] = trial.suggest_categorical(
                "warmup_epochs", list(self.warmup_epochs)
            )
        return check_preset({"model": model, "train": train}, f"trial {trial.number}")


@dataclass(frozen=True)
class SearchRequest:
    """What ``molprop hpopt`` needs: the data (as for ``train``), the trial budget (``epochs``
    per trial, ``patience``), the study (``storage``, ``study_name``), ``n_trials`` for this
    worker (0: only write the reports), the sampler ``seed`` (give each worker its own),
    the pruner's warm-up (epochs before a trial may be pruned) and ``out`` (reports)."""

    table: TableSpec
    split: SplitSpec
    out: Path
    task_type: TaskType = "regression"
    space: SearchSpace = field(default_factory=SearchSpace)
    epochs: int = 30
    patience: int = 10
    n_trials: int = 20
    timeout: float | None = None
    storage: str | None = None
    study_name: str = "molprop"
    seed: int = 0
    pruner_warmup_epochs: int = 3
    pruner_startup_trials: int = 4
    progress: bool = True


@dataclass(frozen=True)
class SearchData:
    """Training and validation data of the search (the test rows are not in it):
    ``train`` / ``val`` datasets, their row indices in the table and the held-out count."""

    train: Any
    val: Any
    train_rows: list[int]
    val_rows: list[int]
    n_test_held_out: int
    base_model: dict[str, Any]  # dimensions (+ pair_rbf) of every trial's ModelConfig


def search_data(request: SearchRequest) -> SearchData:
    """Featurise and split the table; only the training and validation parts go on."""
    table = load_table(request.table)
    split = split_table(table, request.split)
    if len(split.val) == 0:
        raise ConfigError("hpopt scores trials on the validation split: it is empty")
    task = make_task(
        training_targets(table, False)[split.train],
        list(request.table.target_columns),
        request.task_type,
    )
    train, val = training_datasets(table, split, task)
    g0 = table.graphs[0]
    dims = {
        "node_dim": int(g0.x.shape[1]),
        "edge_dim": int(g0.edge_attr.shape[1]),
        "n_tasks": len(request.table.target_columns),
        # 3D inputs get molprop train's default element-pair Gaussians
        "pair_rbf": default_pair_rbf(request.table.featurizer.kind),
    }
    log.info(
        "hpopt data: %d train, %d validation molecules (%d test rows held out, never used)",
        len(split.train),
        len(split.val),
        len(split.test),
    )
    return SearchData(
        train,
        val,
        [int(table.rows[i]) for i in split.train],
        [int(table.rows[i]) for i in split.val],
        len(split.test),
        dims,
    )


def storage_for(spec: str | None, out: Path) -> optuna.storages.BaseStorage | str:
    """``--storage``: None -> SQLite ``out/study.db``; a URL as given (SQLite with a 60 s busy
    timeout); ``*.log`` / ``*.journal`` -> a journal file; ``*.db`` / ``*.sqlite`` -> SQLite."""
    if spec is None:
        spec = str(Path(out) / "study.db")
    if "://" not in spec:
        path = Path(spec)
        if path.suffix in (".log", ".journal"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if path.suffix not in (".db", ".sqlite", ".sqlite3"):
            raise ConfigError(
                f"--storage {spec!r}: give an SQLAlchemy URL, a .db/.sqlite file or a "
                ".log/.journal file"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        spec = f"sqlite:///{path.resolve()}"
    kwargs = {"connect_args": {"timeout": 60}} if spec.startswith("sqlite") else {}
    return _rdb_storage(spec, kwargs)


def _rdb_storage(url: str, engine_kwargs: dict, attempts: int = 6) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage; retried when workers starting together race to create the schema
    (seen with SQLite: ``UNIQUE constraint failed: alembic_version.version_num``)."""
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(attempts):
        try:
            return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
        except SQLAlchemyError as exc:
            if attempt == attempts - 1:
                raise ConfigError(f"cannot open the study storage {url}: {exc}") from exc
            log.info("storage busy (%s); retrying", type(exc).__name__)
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def open_study(request: SearchRequest) -> optuna.Study:
    return optuna.create_study(
        study_name=request.study_name,
        storage=storage_for(request.storage, request.out),
        load_if_exists=True,
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=request.seed),
        pruner=optuna.pruners.MedianPruner(
            n_startup_trials=request.pruner_startup_trials,
            n_warmup_steps=request.pruner_warmup_epochs,
        ),
    )


def trial_train_config(request: SearchRequest, preset: dict[str, dict[str, Any]]) -> TrainConfig:
    return replace(
        TrainConfig(epochs=request.epochs, patience=request.patience, seed=request.seed),
        ensemble_size=1,
        **preset["train"],
    )


def make_objective(request: SearchRequest, data: SearchData):
    """The Optuna objective: best validation loss of one member trained with the trial's
    preset; the median pruner sees ``val_loss`` after every epoch."""
    from optuna_integration import PyTorchLightningPruningCallback

    def objective(trial: optuna.Trial) -> float:
        preset = request.space.suggest(trial)
        cfg = trial_train_config(request, preset)
        model = build_model(ModelConfig(**data.base_model, **preset["model"]), request.seed)
        trial.set_user_attr("preset", preset)
        trial.set_user_attr("worker", f"{os.uname().nodename}:{os.getpid()}")
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            _, summary = fit_member(
                model,
                data.train,
                data.val,
                cfg,
                request.seed,
                None,
                False,
                task_type=request.task_type,
                extra_callbacks=[PyTorchLightningPruningCallback(trial, monitor="val_loss")],
            )
        finally:  # pruned trials too
            trial.set_user_attr("seconds", round(time.perf_counter() - start, 2))
            trial.set_user_attr("cpu_seconds", round(time.process_time() - cpu_start, 2))
        return float(summary["best_val_loss"])

    return objective


def run_search(request: SearchRequest) -> optuna.Study:
    """Run this worker's trials in the shared study, then write the reports (every worker
    writes them from the whole study when it finishes; see ``training.hpopt_report``)."""
    from molprop.training.hpopt_report import write_reports

    request.out.mkdir(parents=True, exist_ok=True)
    study = open_study(request)
    if request.n_trials > 0:
        data = search_data(request)

        def note(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
            value = "" if trial.value is None else f" val_loss {trial.value:.4f}"
            log.info("trial %d %s%s %s", trial.number, trial.state.name, value, trial.params)

        study.optimize(
            make_objective(request, data),
            n_trials=request.n_trials,
            timeout=request.timeout,
            callbacks=[note],
            show_progress_bar=request.progress and not os.environ.get("MOLPROP_NO_PROGRESS"),
            catch=(),
        )
    write_reports(study, request.out)
    return study
