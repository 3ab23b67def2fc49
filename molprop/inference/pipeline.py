"""The prediction pipeline: the stages every prediction of a loaded model goes through, in order.

::

    parse/screen → featurise → augment → model → domain → intervals (+ percentiles)

1. **parse/screen** (:mod:`molprop.inference.screen`): the call's work limits
   (:class:`~molprop.inference.screen.WorkLimits`), then the SMILES parse and the chemistry
   checks (standardisation, supported elements). A structure's record is read instead (an
   unreadable one fails its row).
2. **featurise**: the model's featuriser on the screened molecule (SMILES; a 3D model embeds a
   conformer) or on the structure's own coordinates. Stages 1-2 run per row
   (:func:`featurize_smiles`, :func:`featurize_structures`; worker processes run the same
   per-row function, :mod:`molprop.inference.pool`); a row that fails is its exception, kept
   in place, and has no prediction.
3. **augment** (:mod:`molprop.inference.augment`): the extra inputs of a label/embed-augmented
   transfer model, made by the pretrained copy it carries, or the measured low-fidelity labels
   given per row (:func:`measured_low`); nothing for other models.
4. **model**: the ensemble's forward passes in target units -> one value per target, the
   members' spread (``<target>_std``), the unit columns, ``status`` / ``error`` per row
   (:func:`run_model`).
5. **domain** (:mod:`molprop.artifact.domain`): ``in_domain`` and ``similarity`` of the molecule
   each row's model read (the standardised SMILES, or the molecule perceived from a structure's
   coordinates), for a model with an applicability domain (:func:`assess_domain`).
6. **intervals** (:mod:`molprop.inference.intervals`): calibrated probabilities
   (classification), ``<target>_percentile`` among approved drugs, and the conformal
   ``<target>_low`` / ``_high`` (regression) at the requested level, binned by the domain of
   stage 5 (:func:`calibrate`, :func:`add_intervals`).

:func:`predict_rows` runs stages 3-6 on featurised rows; every entry point composes stages 1-2
with it and adds its leading columns: :class:`~molprop.inference.Predictor` (``predict``,
``predict_frame``, ``predict_structures``, ``predict_structure_file``; ``predict_graphs`` is
stages 3-6 for rows whose molecules it is not told, so without the domain; ``embed`` is stages
1-2 then the encoder), the streaming loop and the job worker (``predict_frame`` per chunk), the
panel (one ``predict_frame`` per model over shared stages 1-2), the CLI
(:mod:`molprop.inference.files`) and the service (its pre-queue screen is stage 1's work
limits, then ``Predictor.predict`` / ``Panel.predict``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import pandas as pd
import torch

from molprop.artifact.calibration import Calibration, novelty_from_similarity
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.domain import ApplicabilityDomain
from molprop.artifact.reference import Reference
from molprop.errors import InvalidInputError
from molprop.graph import MolGraph
from molprop.inference import intervals
from molprop.inference.augment import Augmenter, parse_low_rows
from molprop.inference.rows import STATUS_ERROR, STATUS_OK, split_failures
from molprop.inference.screen import NO_LIMITS, ScreenedFeaturizer, WorkLimits, screened_row
from molprop.io.table import featurize_rows
from molprop.models.predict import predict_targets

log = logging.getLogger(__name__)

#: one row between the stages: its graph, or the exception that stopped it
Item = MolGraph | Exception


class LoadedModel(Protocol):
    """What the stages read of a loaded model (a :class:`~molprop.inference.Predictor`)."""

    directory: Path
    config: ArtifactConfig
    members: list
    backend: str
    featurizer: Any
    screened: ScreenedFeaturizer
    augmenter: Augmenter
    domain: ApplicabilityDomain | None
    calibration: Calibration | None
    reference: Reference | None


# ------------------------------------------------------------------ stages 1-2: screen, featurise


def featurize_smiles(
    model: LoadedModel,
    smiles: Sequence[object],
    limits: WorkLimits = NO_LIMITS,
    should_stop: Callable[[], bool] | None = None,
) -> list[Item]:
    """Stages 1-2 for SMILES: one graph of the standardised molecule (or the row's failure) per
    SMILES, under ``limits``; ``should_stop`` is asked before every row."""
    return featurize_screened(model.screened, smiles, limits, should_stop)


def featurize_screened(
    screened: ScreenedFeaturizer,
    smiles: Sequence[object],
    limits: WorkLimits = NO_LIMITS,
    should_stop: Callable[[], bool] | None = None,
) -> list[Item]:
    """:func:`featurize_smiles` through the chemistry checks ``screened`` (a panel shares one
    featurisation among models that differ only in their training elements)."""
    with limits.length_limit():
        return featurize_rows(smiles, screened_row(screened, limits, should_stop))


def featurize_structures(model: LoadedModel, records: Sequence[object]) -> list[Item]:
    """Stages 1-2 for structures (``ase.Atoms``, pymatgen objects, RDKit molecules with a
    conformer, or the records of a structure file, where an unreadable record is its
    exception): one graph per record, from its own coordinates. A graph carries the SMILES of
    the molecule perceived from the coordinates where there is one (the domain reads it)."""

    def featurize_record(record: object) -> MolGraph:
        if isinstance(record, Exception):
            raise record  # reported in its row
        return model.featurizer.from_structure(record)

    return featurize_rows(records, featurize_record)


def standardized_smiles(items: Sequence[Item]) -> list[str | None]:
    """The SMILES each row's model read after the chemistry checks (``MolGraph.smiles``); for a
    failed row the standardised SMILES its error carries (an unsupported element), else None."""
    return [getattr(item, "smiles", None) for item in items]


# ------------------------------------------------------------------ stage 3: augment


def low_columns(model: LoadedModel) -> list[str]:
    """The measured low-fidelity labels the model needs per row (empty for most models)."""
    return model.augmenter.low_columns


def measured_low(
    model: LoadedModel, items: Sequence[Item], low: object | None
) -> tuple[list[Item], np.ndarray | None]:
    """Rows whose measured low-fidelity label is missing or not a number become
    ``invalid_input`` (the error names the row); -> (items, (n, T_low) labels or None). A model
    that needs no measured labels ignores ``low``; one that needs them refuses without
    (:class:`~molprop.inference.augment.MissingLowLabels`)."""
    items = list(items)
    columns = low_columns(model)
    if not columns:
        if low is not None:
            log.warning("%s takes no measured low-fidelity labels: 'low' ignored", model.directory)
        return items, None
    if low is None:
        model.augmenter.features([], None)  # raises MissingLowLabels with the explanation
    values, errors = parse_low_rows(low, len(items), columns)
    for i, reason in enumerate(errors):
        if reason and not isinstance(items[i], Exception):
            items[i] = InvalidInputError(reason)
    return items, values


def augment(
    model: LoadedModel, graphs: Sequence[MolGraph], low: np.ndarray | None = None
) -> np.ndarray | None:
    """Stage 3: the extra per-graph inputs of a label/embed-augmented model (made by its
    pretrained copy, or from ``low``, the (n, T_low) measured labels), None for other models."""
    return model.augmenter.features(graphs, low)


# ------------------------------------------------------------------ stage 4: model


def run_model(
    model: LoadedModel,
    items: Sequence[Item],
    measured: np.ndarray | None = None,
    batch_size: int = 256,
    device=None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Stages 3-4 on featurised rows: one column per target (followed by its unit where the
    model records one), ``<target>_std`` for ensembles, ``status`` and ``error``. A model
    failure (the augmentation's included) is every predicted row's ``error``, never raised; a
    non-finite value is its row's. ``measured``: the rows' measured low-fidelity labels."""
    if model.backend == "onnxruntime":
        device = torch.device("cpu")
    n = len(items)
    names = list(model.config.task.target_names)
    values = np.full((n, len(names)), np.nan)
    stds = np.full((n, len(names)), np.nan)
    status, error, ok = split_failures(items)
    if ok:
        graphs = [item for item in items if not isinstance(item, Exception)]  # rows ``ok``
        try:
            preds = predict_targets(
                model.members,
                graphs,
                model.config.task,
                augment(model, graphs, None if measured is None else measured[ok]),
                batch_size=batch_size,
                device=device,
                should_stop=should_stop,
            )
        except Exception as exc:  # a model failure is reported per row, never raised
            log.exception("prediction failed")
            status[ok], error[ok] = STATUS_ERROR, f"model failure: {type(exc).__name__}: {exc}"
        else:
            values[ok] = preds.mean(0)
            stds[ok] = preds.std(0) if len(model.members) > 1 else np.nan
            bad = ~np.isfinite(values[ok]).all(axis=1)
            for i in np.asarray(ok)[bad]:
                status[i], error[i] = STATUS_ERROR, "model produced a non-finite value"
                values[i] = np.nan
    frame = pd.DataFrame(values, columns=names)
    for j, (name, unit) in enumerate(zip(names, model.config.task.units)):
        if unit:  # every output says its unit
            frame.insert(2 * j + 1, f"{name}_unit", unit)
    if len(model.members) > 1:
        for j, name in enumerate(names):
            frame[f"{name}_std"] = stds[:, j]
    frame["status"] = status
    frame["error"] = error
    return frame


# ------------------------------------------------------------------ stage 5: domain


def assess_domain(
    model: LoadedModel,
    frame: pd.DataFrame,
    items: Sequence[Item],
    inputs: Sequence[object] | None = None,
) -> np.ndarray | None:
    """Stage 5: add ``in_domain`` (nullable ``boolean``: ``pd.NA`` for rows without a
    prediction) and ``similarity`` (the max Tanimoto similarity to the training set that
    decided it; NaN for rows without a prediction) for a model with an applicability domain;
    -> the rows' max similarity (None without a domain). A row's molecule is its graph's
    SMILES (the standardised SMILES, or the molecule perceived from a structure; a graph
    carrying its fingerprint is not parsed again), else ``inputs[i]`` where that is a string;
    a row with neither has similarity 0 (out of the domain)."""
    if model.domain is None:
        return None
    ok = (frame["status"] == STATUS_OK).to_numpy()
    given = [None] * len(items) if inputs is None else list(inputs)
    text = [
        getattr(item, "smiles", None) or (s if isinstance(s, str) else "")
        for item, s in zip(items, given, strict=True)
    ]
    similarity, in_domain = model.domain.assess(text, items)
    flags = pd.array(in_domain, dtype="boolean")
    flags[~ok] = pd.NA
    frame["in_domain"] = flags
    frame["similarity"] = np.where(ok, np.asarray(similarity, dtype=np.float64), np.nan)
    return similarity


# ------------------------------------------------------------------ stage 6: intervals


def calibrate(model: LoadedModel, frame: pd.DataFrame) -> None:
    """Stage 6, before the domain is known: Platt-calibrated probabilities (classification,
    ``<target>_uncalibrated`` kept) and ``<target>_percentile`` after each target's value (and
    unit), its percentile (0-100) among the model's predictions for approved drugs
    (:mod:`molprop.artifact.reference`; a model that stores none has no such column)."""
    names = list(model.config.task.target_names)
    intervals.calibrate_probabilities(frame, model.calibration, names)
    if model.reference is None:
        return
    for name in names:
        if name not in model.reference.quantiles:
            continue
        at = cast(int, frame.columns.get_loc(name)) + 1 + int(f"{name}_unit" in frame.columns)
        frame.insert(
            at, f"{name}_percentile", np.round(model.reference.percentile(name, frame[name]), 1)
        )


def add_intervals(
    model: LoadedModel,
    frame: pd.DataFrame,
    level: float | None,
    similarity: np.ndarray | None = None,
) -> None:
    """Stage 6: ``<target>_low`` / ``_high`` at ``level`` (None: none), in the Mondrian bins of
    the rows' ``in_domain`` where stage 5 ran (else the std bins and the pooled bin serve);
    ``similarity``: the rows' max similarity to the training set (a novelty-scaled calibration
    reads it)."""
    in_domain = (
        frame["in_domain"].to_numpy(dtype=bool, na_value=False)
        if "in_domain" in frame.columns
        else None
    )
    novelty = novelty_from_similarity(similarity)
    names = list(model.config.task.target_names)
    intervals.add_intervals(frame, model.calibration, names, level, in_domain, novelty)


def note_uncalibrated(model: LoadedModel, level: float | None) -> None:
    """The once-per-model log line when intervals or calibrated probabilities are asked of a
    model without calibration."""
    task_type = model.config.task.task_type
    if model.calibration is None and (level is not None or task_type != "regression"):
        intervals.note_uncalibrated(model.directory, task_type)


# ------------------------------------------------------------------ stages 3-6


def predict_rows(
    model: LoadedModel,
    items: Sequence[Item],
    *,
    level: float | None = None,
    low: object | None = None,
    domain: bool = True,
    inputs: Sequence[object] | None = None,
    batch_size: int = 256,
    device=None,
    should_stop: Callable[[], bool] | None = None,
    calibrated: bool = True,
) -> pd.DataFrame:
    """Stages 3-6 on featurised rows (row i is ``items[i]``): augment, model, domain (when
    ``domain``; ``inputs``: the rows' input text, read where a graph carries no SMILES), then
    calibration, percentiles and intervals at ``level`` (a checked level, None for none).
    ``low``: the rows' measured low-fidelity labels (:func:`measured_low`).
    ``calibrated=False``: stages 3-4 only, the ensemble's raw output (calibration fitting)."""
    screened, measured = measured_low(model, items, low)
    frame = run_model(model, screened, measured, batch_size, device, should_stop)
    if not calibrated:
        return frame
    note_uncalibrated(model, level)
    calibrate(model, frame)
    similarity = assess_domain(model, frame, items, inputs) if domain else None
    add_intervals(model, frame, level, similarity)
    return frame


__all__ = [
    "Item",
    "LoadedModel",
    "add_intervals",
    "assess_domain",
    "augment",
    "calibrate",
    "featurize_screened",
    "featurize_smiles",
    "featurize_structures",
    "low_columns",
    "measured_low",
    "note_uncalibrated",
    "predict_rows",
    "run_model",
    "standardized_smiles",
]
