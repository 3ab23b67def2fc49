"""``molprop finetune``: pretrained artifact + table of (new) labels -> fine-tuned artifact.

Steps: resolve the pretrained artifact -> read train (and val/test, or split train) with the
pretrained featuriser -> fit a new scaler on the training labels -> build augmentation inputs
(label/embed strategies) -> :func:`~molprop.training.fit.fit_ensemble`, each member loading the
pretrained weights strictly, re-initialising the head when needed, frozen if asked -> evaluate
and score the baselines (:mod:`molprop.transfer.baselines`: mean predictor, starting model,
linear model on its prediction) on the held-out parts -> write the artifact (plus a copy of the
pretrained artifact when prediction needs augmentation inputs), its applicability domain,
calibration, ``metrics.json`` (with ``baselines`` and ``verdict``) and ``card.md``: in a
data-parallel run, on global rank 0 only. Returns a :class:`FinetuneResult`.

Default for in-house assays (new target names): ``full`` fine-tuning with a fresh head, encoder
and readout loaded from the pretrained model, scaffold split 0.8/0.1/0.1 when no ``val`` table
is given, early stopping on validation loss.
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
from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
from molprop.artifact.resolve import resolve_base_model
from molprop.data.loader import GraphDataset
from molprop.data.splits import SplitType
from molprop.errors import ConfigError, DataError, InvalidInputError
from molprop.inference.augment import PretrainedSource, fit_augmentation, raw_features, standardise
from molprop.io.table import InvalidPolicy, MoleculeTable, parse_target
from molprop.models.config import (
    ModelConfig,
    TaskConfig,
    TaskType,
    TrainConfig,
    finetune_train_config,
)
from molprop.models.model import MolPropModel
from molprop.training.calibrate import calibrate_artifact
from molprop.training.fit import evaluate_split, fit_ensemble, is_global_zero
from molprop.training.tables import (
    SplitSpec,
    TableSpec,
    load_table,
    make_task,
    model_targets,
    split_table,
    table_set,
)
from molprop.training.train import TrainResult
from molprop.training.warm_start import init_from_pretrained
from molprop.transfer import MODES, Mode, StrategyName
from molprop.transfer.baselines import baseline_metrics, start_columns, verdict
from molprop.transfer.crossfit import CrossFit, out_of_fold_predictions
from molprop.transfer.strategies import (
    Strategy,
    freeze_encoder,
    get_strategy,
    linear_fit,
    measured_residual_targets,
    unfreeze_encoder,
)

log = logging.getLogger(__name__)


@dataclass
class FinetuneRequest:
    """Everything ``molprop finetune`` needs. ``low_columns`` (default: the pretrained model's
    targets) are read only for ``label-augment`` / ``delta`` in transductive mode (the
    artifact then needs them to predict). ``crossfit`` (inductive label strategies): the
    training split's inputs are out-of-fold predictions (:mod:`molprop.transfer.crossfit`).
    ``keep_head``: load the pretrained head too (same number of targets and task type, no
    augmentation). ``unfreeze_after`` N > 0: the encoder is frozen for the first N epochs,
    then everything trains for the remaining ``train.epochs - N``. ``pretrained`` None: the
    foundation model (``artifact.resolve.FOUNDATION_MODEL``), an error when there is none.
    ``strategy`` names the strategy (:attr:`transfer_strategy` is its class of
    :mod:`molprop.transfer.strategies`). ``train`` defaults to
    :func:`molprop.models.config.finetune_train_config` (what ``molprop finetune`` uses)."""

    pretrained: str | Path | None
    data: str | Path | pd.DataFrame
    target_columns: list[str]
    out: str | Path
    smiles_column: str = "smiles"
    val_data: str | Path | pd.DataFrame | None = None
    test_data: str | Path | pd.DataFrame | None = None
    strategy: StrategyName = "full"
    mode: Mode = "transductive"
    low_columns: list[str] | None = None
    task_type: TaskType = "regression"
    split_type: SplitType = "scaffold"
    split_sizes: tuple[float, float, float] = (0.8, 0.1, 0.1)
    split_column: str | None = None
    train: TrainConfig = field(default_factory=finetune_train_config)
    units: list[str] = field(default_factory=list)
    invalid: InvalidPolicy = "skip"
    name: str = ""
    progress: bool = True
    crossfit: CrossFit | None = None
    keep_head: bool = False
    unfreeze_after: int = 0

    @property
    def transfer_strategy(self) -> Strategy:
        """The strategy ``strategy`` names (:class:`ConfigError` for an unknown name)."""
        return get_strategy(self.strategy)

    @property
    def split_spec(self) -> SplitSpec:
        """How ``data`` is split when no ``val_data`` is given."""
        return SplitSpec(self.split_type, self.split_sizes, self.split_column, self.train.seed)

    def table_spec(self, data: str | Path | pd.DataFrame, pre: ArtifactConfig) -> TableSpec:
        """One of the tables, read with the pretrained model's featuriser."""
        return TableSpec(
            data,
            self.smiles_column,
            self.target_columns,
            pre.featurizer,
            self.invalid,
            self.progress,
        )


@dataclass(frozen=True)
class FinetuneResult(TrainResult):
    """A :class:`TrainResult` plus whether the head was re-initialised; ``metrics`` holds the
    ``baselines`` and their ``verdict`` (:func:`molprop.transfer.baselines.verdict`)."""

    fresh_head: bool = False


@dataclass
class FinetuneData:
    """Featurised parts; ``low`` holds (n, T_low) measured low labels per part used as inputs,
    or None; ``train_low`` (``delta-measured``): the training split's measured low labels,
    read for its training targets only (never an input)."""

    parts: dict[str, MoleculeTable]
    low: dict[str, np.ndarray | None]
    train_low: np.ndarray | None = None


def measured_low(table: MoleculeTable, columns: list[str]) -> np.ndarray:
    """(n, T_low) measured low-fidelity labels of the table's valid rows (NaN if blank)."""
    if table.frame is None or any(c not in table.frame.columns for c in columns):
        raise DataError(
            f"measured low-fidelity column(s) {columns} missing: label-augment / delta "
            "(transductive) need them in every table, delta-measured in the training table"
        )
    out = np.full((len(table), len(columns)), np.nan)
    for j, col in enumerate(columns):
        for i, v in enumerate(table.frame[col].iloc[table.rows].tolist()):
            try:
                out[i, j] = parse_target(str(v), col)
            except InvalidInputError:
                out[i, j] = np.nan
    return out


def load_parts(request: FinetuneRequest, pre: ArtifactConfig) -> FinetuneData:
    train = load_table(request.table_spec(request.data, pre))
    if request.val_data is not None:
        parts = {"train": train, "val": load_table(request.table_spec(request.val_data, pre))}
        if request.test_data is not None:
            parts["test"] = load_table(request.table_spec(request.test_data, pre))
    else:
        split = split_table(train, request.split_spec)
        parts = {
            "train": train.subset(split.train),
            "val": train.subset(split.val),
            "test": train.subset(split.test),
        }
    use_measured = uses_measured(request)
    low_cols = low_columns(request, pre)
    low = {k: measured_low(t, low_cols) if use_measured else None for k, t in parts.items()}
    train_low = None
    if request.transfer_strategy.measured_targets:
        train_low = measured_low(parts["train"], low_cols)
    return FinetuneData(parts, low, train_low)


def low_columns(request: FinetuneRequest, pre: ArtifactConfig) -> list[str]:
    """The measured low-fidelity columns: as requested, else the pretrained model's targets."""
    return request.low_columns or list(pre.task.target_names)


def uses_measured(request: FinetuneRequest) -> bool:
    """True when the model is trained on (and will predict from) measured low labels."""
    return request.transfer_strategy.reads_measured_low(request.mode)


@dataclass
class AugmentationInputs:
    """Per part: the standardised (n, n_extra) inputs (None without augmentation) and what
    they are (for ``metrics.json``); the artifact's :class:`Augmentation` (statistics of
    train); the cross-fitting report (empty without); the training split's unstandardised
    inputs."""

    extra: dict[str, np.ndarray | None]
    augment: Augmentation | None
    used: dict[str, str]
    crossfit: dict[str, Any] = field(default_factory=dict)
    raw_train: np.ndarray | None = None


def _describe(kind: str, low: np.ndarray | None, columns: list[str], in_sample: bool) -> str:
    if kind == "embed":
        return "pretrained model's graph embedding"
    if low is None:
        return "pretrained model's prediction" + (
            " (in-sample: it was pretrained on these molecules)" if in_sample else ""
        )
    missing = int((~np.isfinite(low)).sum())
    text = f"measured {', '.join(columns)}"
    return text + (f" ({missing} missing: pretrained prediction)" if missing else "")


def augmentation_inputs(
    request: FinetuneRequest, pre_dir: Path, data: FinetuneData
) -> AugmentationInputs:
    """The inputs appended to the graph embedding (and/or mapped by the skip), per part."""
    kind = request.transfer_strategy.augment
    if kind is None:
        return AugmentationInputs({k: None for k in data.parts}, None, {})
    source = PretrainedSource(pre_dir)
    columns = request.low_columns or source.target_names
    raw = {k: raw_features(kind, source, t.graphs, data.low[k]) for k, t in data.parts.items()}
    inductive = request.mode == "inductive"
    used = {
        k: _describe(kind, data.low[k], columns, inductive and k == "train") for k in data.parts
    }
    report: dict[str, Any] = {}
    if kind == "label" and inductive and request.crossfit is not None:
        train = data.parts["train"]
        raw["train"], report = out_of_fold_predictions(
            request.crossfit, source.config, train.smiles, train.graphs, request.train.seed
        )
        used["train"] = f"out-of-fold predictions of {request.crossfit.folds} fold models"
        log.info("cross-fitted training inputs: %s", report)
    measured = columns if data.low["train"] is not None else None
    aug = fit_augmentation(kind, raw["train"], measured)
    extra: dict[str, np.ndarray | None] = {k: standardise(aug, v) for k, v in raw.items()}
    return AugmentationInputs(extra, aug, used, report, raw["train"])


def write_finetuned(
    out: Path,
    artifact: ArtifactConfig,
    members: list[MolPropModel],
    metrics: dict[str, Any],
    pre_dir: Path,
    data: FinetuneData | None = None,
) -> None:
    """The fine-tuned artifact, with a copy of the pretrained one when prediction needs its
    augmentation inputs, its calibration (on ``data``'s validation part, when given) and
    ``metrics.json``. Global rank 0 alone calls this."""
    written = Artifact(out)
    if artifact.augment is not None:  # what prediction needs of it: config, weights, ...
        written.write_pretrained_copy(Artifact(pre_dir), artifact.augment.source)
    written.save(artifact, members)
    if data is not None and artifact.featurizer.kind == "2d":
        # applicability domain over the training SMILES, as ``molprop train`` writes it
        written.add_domain(list(data.parts["train"].smiles))
    if data is not None:
        calibrate_finetuned(out, data, metrics)
    written.write_metrics(metrics)
    write_finetuned_card(out, artifact, metrics)


def write_finetuned_card(out: Path, artifact: ArtifactConfig, metrics: dict[str, Any]) -> None:
    """``card.md`` of a fine-tuned artifact, with the baselines' verdict among its notes."""
    notes = []
    if "verdict" in metrics:
        notes.append(f"Baselines ({metrics['verdict']['part']}): {metrics['verdict']['message']}.")
        chosen = metrics.get("baseline_start_targets") or {}
        if chosen:
            notes.append(
                "The starting model as it is, per target: "
                + "; ".join(
                    f"{t}: its {c['start_target']} ({c['chosen_by']})" for t, c in chosen.items()
                )
                + "."
            )
        for part, found in metrics.get("baselines", {}).items():
            key = metrics["verdict"]["metric"]
            shown = ", ".join(f"{name} {m.get(key, float('nan')):.3g}" for name, m in found.items())
            model = metrics.get(part, {}).get("ensemble", {}).get(key, float("nan"))
            notes.append(
                f"Held-out {part} {key.upper()}: fine-tuned {model:.3g}; baselines {shown}."
            )
    prov = artifact.provenance
    Artifact(out).write_card(
        CardTexts(
            title=f"fine-tuned from {Path(prov.finetuned_from).name} ({prov.strategy})",
            data_source="the fine-tuning table",
            licence="as the fine-tuning data's",
            intended_use="the fine-tuning assay's chemistry; check the baselines below first",
            notes=notes,
        )
    )


def calibrate_finetuned(out: Path, data: FinetuneData, metrics: dict[str, Any]) -> None:
    """Calibrate the written artifact on the validation part (the predictor's own predictions:
    augmentation inputs from the pretrained copy), score it on the test part, and add the
    ``calibration`` entry to ``metrics``. Without a validation part: not calibrated."""
    parts = data.parts
    if len(parts.get("val", [])) == 0:
        log.warning("no validation data: %s is not calibrated (no intervals)", out)
        return

    def whole(part: str):
        return table_set(parts[part], np.arange(len(parts[part])), data.low.get(part))

    test = whole("test") if len(parts.get("test", [])) else None
    metrics["calibration"] = calibrate_artifact(out, whole("val"), test, strict=False)


def finetuned_config(
    request: FinetuneRequest,
    pre_dir: Path,
    pre: ArtifactConfig,
    model: ModelConfig,
    task: TaskConfig,
    aug: Augmentation | None,
    fresh: bool,
    n_members: int,
) -> ArtifactConfig:
    """The fine-tuned artifact's config: the pretrained featuriser, the new task and head."""
    provenance = Provenance(
        finetuned_from=str(pre_dir), strategy=request.strategy, mode=request.mode, fresh_head=fresh
    )
    return ArtifactConfig(
        model=model,
        task=task,
        featurizer=pre.featurizer,
        train=request.train,
        n_members=n_members,
        name=request.name or Path(request.out).name,
        provenance=provenance,
        augment=aug,
    )


def staged_fit(
    request: FinetuneRequest,
    make_member,
    train: GraphDataset,
    val: GraphDataset | None,
    out: Path,
    task_type,
    start_candidate: bool = False,
):
    """``unfreeze_after`` N: N epochs with the encoder frozen (logs in ``out/stage1``), then
    the remaining epochs with every weight training, from the stage-1 weights."""
    cfg = request.train
    n = request.unfreeze_after
    if n >= cfg.epochs:
        raise ConfigError(f"--unfreeze-after {n} must be below --epochs {cfg.epochs}")
    stage1 = fit_ensemble(
        make_member,
        train,
        val,
        replace(cfg, epochs=n),
        out / "stage1",
        request.progress,
        task_type=task_type,
        start_candidate=start_candidate,
    )
    log.info("encoder unfrozen after %d epochs", n)
    fitted = fit_ensemble(
        lambda m, seed: unfreeze_encoder(stage1.members[m]),
        train,
        val,
        replace(cfg, epochs=cfg.epochs - n),
        out,
        request.progress,
        task_type=task_type,
        start_candidate=True,  # stage 1's result, already the best on validation
    )
    summaries = [
        {**s2, "stage1": s1} for s1, s2 in zip(stage1.summaries, fitted.summaries, strict=True)
    ]
    return type(fitted)(fitted.members, summaries)


def part_targets(
    data: FinetuneData, inputs: AugmentationInputs, low_columns: list[str]
) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """The (n, T) labels each part trains / early-stops on: the measured high labels, except
    ``delta-measured``'s training split, ``high − (a·low + b) + (a'·x + b')`` (measured low
    labels of the training molecules, ``x`` their inductive inputs); and what ``metrics.json``
    says about those (the fits, the residual's RMSE; None for the other strategies)."""
    targets = {k: t.targets for k, t in data.parts.items()}
    if data.train_low is None:
        return targets, None
    x = inputs.raw_train
    assert x is not None  # delta-measured augments: its training inputs are kept
    targets["train"], fits = measured_residual_targets(targets["train"], data.train_low, x)
    residual = targets["train"] - (x @ np.asarray(fits["x_weight"]).T + fits["x_bias"])
    note = (
        "train: high − (a·low + b) + (a'·x + b'), with the MEASURED low-fidelity labels "
        f"{', '.join(low_columns)} of the training molecules (a, b: least squares of high on "
        "them) and x their augmentation input (a', b': the skip's fit); val/test: the measured "
        "high labels. Prediction uses no measured label."
    )
    rmse = np.sqrt(np.nanmean(residual**2, axis=0))
    return targets, {"note": note, **fits, "train_residual_rmse": rmse.tolist()}


def held_out_baselines(
    pre_dir: Path, pre: ArtifactConfig, data: FinetuneData, task: TaskConfig, kept_head: bool
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, str]]]:
    """The baselines' metrics on the held-out parts (:mod:`molprop.transfer.baselines`) and,
    per fine-tuned target, the starting target its ``start`` baselines use
    (:func:`~molprop.transfer.baselines.start_columns`; empty when the task types differ:
    then there are no ``start`` baselines)."""
    parts = {k: t for k, t in data.parts.items() if k == "train" or len(t)}
    targets = {k: t.targets for k, t in parts.items()}
    names = list(task.target_names)
    if pre.task.task_type != task.task_type:
        return baseline_metrics(targets, None, task.task_type, names), {}
    source = PretrainedSource(pre_dir)
    predicted = {k: source.low_predictions(t.graphs) for k, t in parts.items()}
    start_names = list(pre.task.target_names)
    chosen = start_columns(names, start_names, targets["train"], predicted["train"], kept_head)
    index = [start_names.index(chosen[n]["start_target"]) for n in names]
    start = {k: p[:, index] for k, p in predicted.items()}
    return baseline_metrics(targets, start, task.task_type, names), chosen


def run_finetune(request: FinetuneRequest) -> FinetuneResult:
    """Fine-tune and write the artifact to ``request.out`` (in a data-parallel run, global rank
    0 alone writes files; every rank trains and evaluates)."""
    start = time.perf_counter()
    if request.mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {request.mode!r}")
    strategy = get_strategy(request.strategy, request.mode)
    pre_dir = resolve_base_model(request.pretrained)
    out = Path(request.out)
    writes = is_global_zero()
    if writes:
        out.mkdir(parents=True, exist_ok=True)
    pre = Artifact(pre_dir).read_config()
    data = load_parts(request, pre)
    task = make_task(  # the high-fidelity target's own scaler
        data.parts["train"].targets, request.target_columns, request.task_type, request.units
    )
    inputs = augmentation_inputs(request, pre_dir, data)
    extra, aug = inputs.extra, inputs.augment
    fresh = strategy.needs_fresh_head(
        pre, request.target_columns, request.task_type, request.keep_head
    )
    n_extra = 0 if extra["train"] is None else extra["train"].shape[1]
    config = strategy.model_config(pre.model, len(request.target_columns), n_extra)
    skip = None
    if config.extra_skip:  # the linear bar: least squares of the scaled target on the inputs
        assert extra["train"] is not None  # a skip is fitted on the augmentation's inputs
        skip = linear_fit(extra["train"], model_targets(task, data.parts["train"].targets))

    targets, residual = part_targets(data, inputs, low_columns(request, pre))

    def dataset(part: str) -> GraphDataset:
        t = data.parts[part]
        return GraphDataset(t.graphs, model_targets(task, targets[part]), extra[part])

    def make_member(m: int, seed: int) -> MolPropModel:
        source, i = Artifact(pre_dir), m % pre.n_members
        state, origin = source.read_member_weights(i), str(source.member_path(i))
        model = init_from_pretrained(config, state, origin, fresh, seed)
        if skip is not None:
            strategy.init_skip(model, *skip)
        frozen = strategy.freezes_encoder or request.unfreeze_after > 0
        return freeze_encoder(model) if frozen else model

    log.info(
        "fine-tuning %s (%s, %s, fresh head: %s)", pre_dir, request.strategy, request.mode, fresh
    )
    cfg = request.train
    val = dataset("val") if len(data.parts.get("val", [])) else None
    # a kept head: the starting model is a candidate of early stopping (never worse on val)
    if request.unfreeze_after > 0:
        fitted = staged_fit(
            request, make_member, dataset("train"), val, out, task.task_type, not fresh
        )
    else:
        fitted = fit_ensemble(
            make_member,
            dataset("train"),
            val,
            cfg,
            out,
            request.progress,
            task_type=task.task_type,
            start_candidate=not fresh,
        )
    metrics = {
        k: evaluate_split(fitted.members, t.graphs, t.targets, task, extra[k])
        for k, t in data.parts.items()
    }
    metrics["baselines"], metrics["baseline_start_targets"] = held_out_baselines(
        pre_dir, pre, data, task, kept_head=not fresh
    )
    metrics["verdict"] = verdict(metrics, metrics["baselines"], task.task_type)
    log.info("baselines: %s", metrics["verdict"]["message"])
    wall_seconds = round(time.perf_counter() - start, 1)
    metrics["training"] = {
        "members": fitted.summaries,
        "fresh_head": fresh,
        "wall_seconds": wall_seconds,
        "sizes": {k: len(t) for k, t in data.parts.items()},
    }
    if inputs.used:
        metrics["augmentation_input"] = inputs.used
    if inputs.crossfit:
        metrics["crossfit"] = inputs.crossfit
    if residual is not None:
        metrics["training_targets"] = residual
    if writes:
        artifact = finetuned_config(
            request, pre_dir, pre, config, task, aug, fresh, len(fitted.members)
        )
        write_finetuned(out, artifact, fitted.members, metrics, pre_dir, data)
    if "test" in metrics:
        log.info("test metrics: %s", metrics["test"]["ensemble"])
    return FinetuneResult(out, metrics, fitted.summaries, wall_seconds, writes, fresh)
