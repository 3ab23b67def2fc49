"""Extra inputs of label/embed-augmented fine-tuned artifacts (transfer learning).

A fine-tuned artifact with ``config.augment`` holds a copy of the pretrained (low-fidelity)
artifact in the sub-directory ``augment.source``; its predictions (``label``) or graph
embeddings (``embed``), standardised with the training-split statistics stored in
``config.augment``, are appended to the pooled embedding before the head (and/or mapped by the
model's linear skip). An artifact trained on measured low-fidelity labels
(``augment.input == "measured"``, transductive) predicts only with measured labels given per
row (:func:`parse_low_rows`); one trained on predictions makes them from the pretrained copy.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from molprop.artifact.config import ArtifactConfig, Augmentation
from molprop.artifact.handle import Artifact
from molprop.errors import ConfigError, InvalidInputError
from molprop.graph import MolGraph
from molprop.io.table import parse_target
from molprop.models.predict import forward_members, predict_targets

log = logging.getLogger(__name__)

#: sub-directory of a fine-tuned artifact holding the pretrained artifact it needs
PRETRAINED_SUBDIR = "pretrained"


def standardise(augment: Augmentation, raw: np.ndarray) -> np.ndarray:
    """(n, A) raw augmentation inputs -> standardised with the stored training statistics."""
    return (raw - np.asarray(augment.mean)) / np.asarray(augment.std)


def fit_augmentation(
    kind: str, raw_train: np.ndarray, low_columns: Sequence[str] | None = None
) -> Augmentation:
    """Standardisation statistics of the training split's (n, A) raw inputs; ``low_columns``
    given: the inputs are those measured labels (prediction will need them)."""
    mean = raw_train.mean(axis=0)
    std = raw_train.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)
    source = "measured" if low_columns else "predicted"
    return Augmentation(
        kind,  # type: ignore[arg-type]
        PRETRAINED_SUBDIR,
        tuple(map(float, mean)),
        tuple(map(float, std)),
        source,  # type: ignore[arg-type]
        tuple(low_columns or ()),
    )


class MissingLowLabels(ConfigError):
    """A model trained on measured low-fidelity labels was asked to predict without them."""


def parse_low_rows(low: object, n: int, columns: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Per-row measured low-fidelity labels -> ((n, T) floats, per-row error or "").

    ``low``: a sequence of n values (a number or text for one column, or a sequence of T
    values), or an (n, T) array. A missing, non-numeric or non-finite value makes that row's
    error, naming the row and the column; other rows are unaffected."""
    names = list(columns)
    values = np.full((n, len(names)), np.nan)
    errors = [""] * n
    rows = list(np.asarray(low, dtype=object)) if isinstance(low, np.ndarray) else list(low)  # type: ignore[call-overload]
    if len(rows) != n:
        raise ConfigError(f"got {len(rows)} low-fidelity values for {n} rows")
    for i, row in enumerate(rows):
        items = list(row) if isinstance(row, (list, tuple, np.ndarray)) else [row]
        if len(items) != len(names):
            errors[i] = f"row {i}: needs {len(names)} low-fidelity value(s) {names}, got {items}"
            continue
        for j, (name, value) in enumerate(zip(names, items, strict=True)):
            try:
                v = parse_target(value, name)
            except InvalidInputError:
                errors[i] = f"row {i}: low-fidelity label {name!r} value {value!r} is not a number"
                break
            if not np.isfinite(v):
                errors[i] = f"row {i}: low-fidelity label {name!r} is missing ({value!r})"
                break
            values[i, j] = v
    return values, errors


class PretrainedSource:
    """A loaded pretrained artifact (a handle, or its directory) that produces augmentation
    inputs."""

    def __init__(self, artifact: Artifact | str | Path) -> None:
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact(Path(artifact))
        self.directory = self.artifact.directory
        self.config: ArtifactConfig = self.artifact.read_config()
        self.members = self.artifact.load_members(self.config)
        self._nested: PretrainedSource | None = None

    @property
    def target_names(self) -> list[str]:
        return list(self.config.task.target_names)

    def _extra(self, graphs: Sequence[MolGraph]) -> np.ndarray | None:
        """The source's own augmentation inputs, if it is itself an augmented model."""
        aug = self.config.augment
        if aug is None:
            return None
        if self._nested is None:
            self._nested = PretrainedSource(self.artifact.path(aug.source))
        return standardise(aug, raw_features(aug.kind, self._nested, graphs))

    def low_predictions(self, graphs: Sequence[MolGraph]) -> np.ndarray:
        """-> (n, T_low) ensemble-mean predictions in low-fidelity target units."""
        preds = predict_targets(self.members, graphs, self.config.task, self._extra(graphs))
        return preds.mean(0)

    def embeddings(self, graphs: Sequence[MolGraph]) -> np.ndarray:
        """-> (n, D) graph embedding of member 0 (before its head)."""
        return forward_members(self.members[:1], graphs, embed=True)[0]


def raw_features(
    kind: str,
    source: PretrainedSource,
    graphs: Sequence[MolGraph],
    measured_low: np.ndarray | None = None,
) -> np.ndarray:
    """-> (n, A) unstandardised augmentation inputs.

    ``measured_low`` (n, T_low), transductive label augmentation only: used where finite, the
    pretrained prediction elsewhere. Pass ``None`` (inductive) and measured labels are never used.
    """
    if kind == "embed":
        return source.embeddings(graphs)
    if kind != "label":
        raise ConfigError(f"unknown augmentation kind {kind!r}")
    pred = source.low_predictions(graphs)
    if measured_low is None:
        return pred
    measured = np.asarray(measured_low, dtype=np.float64).reshape(pred.shape)
    ok = np.isfinite(measured)
    if (~ok).any():
        log.warning("%d low-fidelity label(s) missing: predictions used", int((~ok).sum()))
    return np.where(ok, measured, pred)


class Augmenter:
    """Prediction-time augmentation inputs of one artifact (the pretrained copy is loaded on
    first use); ``features(graphs)`` is None for ordinary artifacts."""

    def __init__(self, artifact: Artifact, config: ArtifactConfig) -> None:
        self.artifact = artifact
        self.directory = artifact.directory
        self.augment = config.augment
        self._source: PretrainedSource | None = None

    @property
    def low_columns(self) -> list[str]:
        """The measured low-fidelity labels prediction needs (empty: none)."""
        aug = self.augment
        return list(aug.low_columns) if aug is not None and aug.needs_measured else []

    def features(
        self, graphs: Sequence[MolGraph], low: np.ndarray | None = None
    ) -> np.ndarray | None:
        """(n, A) standardised inputs. ``low`` (n, T_low) finite measured labels: required by
        an artifact trained on them (:class:`MissingLowLabels` without), ignored otherwise."""
        if self.augment is None:
            return None
        if self.augment.needs_measured:
            if low is None:
                raise MissingLowLabels(
                    f"model {self.directory} was trained on measured low-fidelity labels "
                    f"{self.low_columns}: give them per row (molprop predict --low-column, "
                    "Predictor.predict(..., low=...), the API's 'low' field)"
                )
            measured = np.asarray(low, dtype=np.float64).reshape(len(graphs), -1)
            return standardise(self.augment, measured)
        if self._source is None:
            self._source = PretrainedSource(self.artifact.path(self.augment.source))
        return standardise(self.augment, raw_features(self.augment.kind, self._source, graphs))
