"""``molprop train``: table -> featurise -> split -> scale -> train N members -> artifact.

The steps are shared with :mod:`molprop.transfer` and the hyperparameter search, which call them
with the arguments they need: :mod:`molprop.training.tables` (``load_table`` of a ``TableSpec``,
``split_table`` of a ``SplitSpec``, ``make_task``: the training targets and the task's
description) and :func:`molprop.training.fit.fit_ensemble`. Calibration is
:mod:`.calibrate` (validation split) or :mod:`.cv_calibrate` (out of fold). Runs return a
:class:`TrainResult`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from molprop.artifact import Artifact, CardTexts
from molprop.artifact.config import ArtifactConfig, Provenance
from molprop.data.splits import Split
from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig
from molprop.io.table import MoleculeTable
from molprop.models.config import ModelConfig, TaskConfig, TaskType, TrainConfig
from molprop.models.model import MolPropModel
from molprop.training.calibrate import calibrate_artifact
from molprop.training.fit import build_model, evaluate_split, fit_ensemble, is_global_zero
from molprop.training.tables import (
    SplitSpec,
    TableSpec,
    load_table,
    make_task,
    split_table,
    table_set,
    training_datasets,
    training_targets,
)
from molprop.training.warm_start import InitSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainResult:
    """What a training run (train, pretrain, finetune) produced.

    ``metrics`` is the content of ``directory/metrics.json``: per part (train / val / test) the
    ensemble and per-member metrics, and under ``training`` the run's summary. ``summaries``:
    per member, its best epoch, best monitored loss, epochs run and seconds. ``written`` is
    False on the ranks > 0 of a data-parallel run: they compute the same metrics but write no
    file (global rank 0 writes the artifact).
    """

    directory: Path
    metrics: dict[str, Any]
    summaries: list[dict]
    wall_seconds: float
    written: bool

    def ensemble(self, part: str = "test") -> dict[str, float]:
        """Ensemble metrics of one part (``{"n": 0}`` for an empty part)."""
        return self.metrics[part]["ensemble"]


@dataclass
class TrainRequest:
    """Everything ``molprop train`` needs. ``model`` holds ModelConfig overrides."""

    data: str | Path | pd.DataFrame
    smiles_column: str
    target_columns: list[str]
    out: str | Path
    task_type: TaskType = "regression"
    split_type: str = "scaffold"
    split_sizes: tuple[float, float, float] = (0.8, 0.1, 0.1)
    split_column: str | None = None
    featurizer: FeaturizerConfig = field(default_factory=FeaturizerConfig)
    model: dict[str, Any] = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)
    invalid: str = "skip"
    units: list[str] = field(default_factory=list)
    name: str = ""
    per_atom: bool = False
    progress: bool = True
    #: what the intervals / probabilities are calibrated on: ``"validation"`` the validation
    #: split (cheap), ``"cv"`` out-of-fold predictions of train + validation from
    #: ``cv_folds``-fold scaffold cross-validation (``cv_folds`` more ensembles are trained;
    #: :mod:`molprop.training.cv_calibrate`)
    calibration: str = "validation"
    cv_folds: int = 5
    #: start from a trained artifact (a model name or directory): its architecture, featuriser
    #: and encoder + readout weights, a fresh head for this task
    #: (:class:`~molprop.training.warm_start.InitSource`); ``model`` and ``featurizer`` must
    #: then agree with it. None: a random start.
    init: str | Path | None = None

    @property
    def table_spec(self) -> TableSpec:
        """The table to read (:func:`~molprop.training.tables.load_table`)."""
        return TableSpec(
            self.data,
            self.smiles_column,
            self.target_columns,
            self.featurizer,
            self.invalid,
            self.progress,
        )

    def started_from(self, init: InitSource | None) -> TrainRequest:
        """The request with the init artifact's featuriser (checked against ours)."""
        if init is None:
            return self
        return replace(self, featurizer=init.featurizer(self.featurizer))

    @property
    def split_spec(self) -> SplitSpec:
        """How to split it (:func:`~molprop.training.tables.split_table`), seeded with ``train.seed``."""
        return SplitSpec(self.split_type, self.split_sizes, self.split_column, self.train.seed)


def write_split(out: Path, table: MoleculeTable, split: Split) -> None:
    """The artifact's ``split.csv`` (and its ``invalid_rows.csv`` when rows were rejected)."""
    artifact = Artifact(out)
    artifact.write_split(
        pd.DataFrame({"row": table.rows, "smiles": table.smiles, "split": split.labels(len(table))})
    )
    if table.invalid:
        artifact.write_invalid_rows(table.invalid_frame())


def evaluate_parts(members, table: MoleculeTable, split: Split, task: TaskConfig) -> dict:
    return {
        part: evaluate_split(members, [table.graphs[i] for i in idx], table.targets[idx], task)
        for part, idx in (("train", split.train), ("val", split.val), ("test", split.test))
    }


def size_invariant_reason(request: TrainRequest, table: MoleculeTable) -> str:
    """Why the model must not see a molecule's size ("" when it may): ``--per-atom`` targets
    and periodic systems (every graph carries image shifts), where a supercell must give the
    same per-atom / intensive prediction as its cell, which the size signal would break."""
    if request.per_atom:
        return "per-atom target"
    if all(g.edge_vec_shift is not None for g in table.graphs):
        return "periodic"
    return ""


def size_invariant_overrides(request: TrainRequest, table: MoleculeTable) -> dict[str, Any]:
    """Model overrides with the size path turned off where :func:`size_invariant_reason`
    says so."""
    overrides = dict(request.model)
    reason = size_invariant_reason(request, table)
    if overrides.get("size_path", True) and reason:
        log.info("size path off (%s)", reason)
        overrides["size_path"] = False
    return overrides


def initial_model_config(
    request: TrainRequest, table: MoleculeTable, init: InitSource | None
) -> ModelConfig:
    """The architecture: ``request.model`` over the defaults, or the ``init`` artifact's (which
    ``request.model`` must agree with) with this task's outputs."""
    g0 = table.graphs[0]
    dims = {"node_dim": g0.x.shape[1], "edge_dim": g0.edge_attr.shape[1]}
    n_tasks = len(request.target_columns)
    if init is None:
        return ModelConfig(n_tasks=n_tasks, **dims, **size_invariant_overrides(request, table))
    config = init.model_config(n_tasks, request.model, **dims)
    reason = size_invariant_reason(request, table)
    if config.size_path and reason:
        raise ConfigError(
            f"the init artifact {init.directory} gives the head the molecule's size, which a "
            f"{reason} model must not see: train it from a random start (--init none)"
        )
    return config


CALIBRATIONS = ("validation", "cv")


def calibrate_cv(
    out: Path, table: MoleculeTable, split: Split, request: TrainRequest
) -> dict[str, Any]:
    """Calibrate the artifact ``out`` on out-of-fold predictions of its train + validation
    rows (:func:`molprop.training.cv_calibrate.calibrate_artifact_cv`; fold models in a
    temporary directory); returns the ``calibration`` entry of ``metrics.json``."""
    from molprop.training.cv_calibrate import CrossValidation, calibrate_artifact_cv

    f_train, f_val, _ = request.split_sizes
    cv = CrossValidation(
        folds=request.cv_folds,
        seed=request.train.seed,
        val_fraction=f_val / (f_train + f_val) if f_val > 0 else 1 / 9,
        progress=request.progress,
    )
    trainval = table_set(table, np.concatenate([split.train, split.val]))
    return calibrate_artifact_cv(out, trainval, table_set(table, split.test), cv, "train+val")


def run_train(request: TrainRequest) -> TrainResult:
    """Train and write the artifact to ``request.out`` (in a data-parallel run, global rank 0
    alone writes files; every rank trains and evaluates)."""
    start = time.perf_counter()
    if request.calibration not in CALIBRATIONS:
        raise ConfigError(f"calibration must be one of {CALIBRATIONS}, got {request.calibration!r}")
    out = Path(request.out)
    init = None if request.init is None else InitSource.open(request.init)
    request = request.started_from(init)
    writes = is_global_zero()
    if writes:
        out.mkdir(parents=True, exist_ok=True)
    table = load_table(request.table_spec)
    split = split_table(table, request.split_spec)
    if writes:
        write_split(out, table, split)
    task = make_task(
        training_targets(table, request.per_atom)[split.train],
        request.target_columns,
        request.task_type,
        request.units,
        request.per_atom,
    )
    model_config = initial_model_config(request, table, init)
    train_ds, val_ds = training_datasets(table, split, task)

    def make_member(m: int, seed: int) -> MolPropModel:
        if init is None:
            return build_model(model_config, seed)
        return init.member(model_config, m, seed)

    fitted = fit_ensemble(
        make_member,
        train_ds,
        val_ds,
        request.train,
        out,
        request.progress,
        task_type=task.task_type,
    )
    members = fitted.members
    metrics = evaluate_parts(members, table, split, task)
    wall_seconds = round(time.perf_counter() - start, 1)
    metrics["training"] = {
        "members": fitted.summaries,
        "wall_seconds": wall_seconds,
        "n_rows_valid": len(table),
        "n_rows_invalid": len(table.invalid),
        "split_sizes": {"train": len(split.train), "val": len(split.val), "test": len(split.test)},
    }
    result = TrainResult(out, metrics, fitted.summaries, wall_seconds, writes)
    if not writes:
        return result
    data = "<DataFrame>" if isinstance(request.data, pd.DataFrame) else str(request.data)
    artifact = ArtifactConfig(
        model=model_config,
        task=task,
        featurizer=request.featurizer,
        train=request.train,
        n_members=len(members),
        name=request.name or out.name,
        provenance=Provenance(
            data=data,
            split_type=request.split_type,
            finetuned_from="" if init is None else str(init.directory),
            fresh_head=None if init is None else True,
            periodic=None  # 3D only (the card reports it)
            if request.featurizer.kind == "2d"
            else any(g.edge_vec_shift is not None for g in table.graphs),
        ),
    )
    written = Artifact(out).save(artifact, members)
    if request.featurizer.kind == "2d":  # applicability domain over the training SMILES
        written.add_domain([table.smiles[i] for i in split.train])
    if request.calibration == "cv":  # out of fold on train + val; the test split is only scored
        metrics["calibration"] = calibrate_cv(out, table, split, request)
    elif len(split.val):  # calibrated on the validation split; the test split is only scored
        metrics["calibration"] = calibrate_artifact(
            out, table_set(table, split.val), table_set(table, split.test), strict=False
        )
    else:
        log.warning("no validation split: %s is not calibrated (no intervals)", out)
    written.write_metrics(metrics)
    write_trained_card(out, data, init)
    log.info("test metrics: %s", metrics["test"]["ensemble"])
    return result


def write_trained_card(out: Path, data: str, init: InitSource | None) -> Path:
    """``card.md`` of a model trained on the user's table: what every artifact documents
    (data, split, model, test metrics, uncertainty, domain, limits)."""
    start = "" if init is None else f", started from {init.directory.name}"
    return Artifact(out).write_card(
        CardTexts(
            title=f"trained on {Path(data).name if data != '<DataFrame>' else 'a table'}{start}",
            data_source=f"`{data}`" if data != "<DataFrame>" else "a table passed in Python",
            licence="as the training data's",
            intended_use="the training table's chemistry and assay",
        )
    )
