"""What training, fine-tuning, the hyperparameter search and calibration read: a labelled table
and its split, the task and the targets a model learns, and labelled sets of molecules.

:func:`load_table` reads a :class:`TableSpec` (CSV / SMILES table or a structure file),
:func:`split_table` splits it as a :class:`SplitSpec` says, :func:`make_task` fits the task's
target scaler on the training targets and :func:`model_targets` gives the targets as the model
learns them; :func:`training_datasets` puts them together. A :class:`LabelledSet` holds
featurised molecules with their labels (a calibration set, a test set, a fold), made from a
table's rows by :func:`table_set` or from another set's by :func:`subset`.

This module imports nothing else of :mod:`molprop.training`: :mod:`.train`,
:mod:`molprop.transfer.finetune`, :mod:`.hpopt`, :mod:`.calibrate` and :mod:`.cv_calibrate`
share it instead of importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.data.loader import GraphDataset
from molprop.data.scaling import TargetScaler
from molprop.data.splits import Split, make_split
from molprop.errors import ConfigError, DataError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.graph import MolGraph
from molprop.io.table import MoleculeTable, load_molecule_table
from molprop.models.config import TaskConfig, TaskType
from molprop.models.predict import per_atom_counts


@dataclass(frozen=True)
class TableSpec:
    """A labelled table to read: the file (CSV, SDF, extxyz) or DataFrame, its SMILES and target
    columns, the featuriser, and what to do with invalid rows (``skip``: report, ``error``)."""

    data: str | Path | pd.DataFrame
    smiles_column: str
    target_columns: Sequence[str]
    featurizer: FeaturizerConfig = field(default_factory=FeaturizerConfig)
    invalid: str = "skip"
    progress: bool = True


@dataclass(frozen=True)
class SplitSpec:
    """How to split a table into train / val / test: ``kind`` random, scaffold or column (the
    ``column`` holds the labels train / val / test), ``sizes`` the fractions, ``seed``."""

    kind: str = "scaffold"
    sizes: tuple[float, float, float] = (0.8, 0.1, 0.1)
    column: str | None = None
    seed: int = 0


def load_table(request: TableSpec) -> MoleculeTable:
    """The featurised table ``request`` names (a structure file with the 3D featuriser: its
    records' own coordinates); invalid rows as ``request.invalid`` says."""
    from molprop.chem.structures import is_structure_path
    from molprop.io.structures import load_structure_table

    featurizer = build_featurizer(request.featurizer)
    if is_structure_path(request.data):  # SDF / extxyz records with their own coordinates
        if request.featurizer.kind != "3d":
            raise ConfigError(
                f"{request.data} is a structure file: train on it with --featurizer 3d "
                "(or give a CSV with a SMILES column)"
            )
        return load_structure_table(
            request.data,
            request.smiles_column,
            request.target_columns,
            featurizer,
            invalid=request.invalid,
            progress=request.progress,
        )
    return load_molecule_table(
        request.data,
        request.smiles_column,
        request.target_columns,
        featurizer.from_smiles,
        invalid=request.invalid,
        progress=request.progress,
    )


def split_table(table: MoleculeTable, spec: SplitSpec) -> Split:
    """The train / val / test split of ``table`` that ``spec`` describes (``DataError`` for a
    missing split column or an empty training part)."""
    column_values = None
    if spec.kind == "column":
        if table.frame is None or spec.column not in table.frame.columns:
            raise DataError(f"split column {spec.column!r} not found")
        column_values = table.frame[spec.column].iloc[table.rows].tolist()
    split = make_split(spec.kind, table.smiles, spec.sizes, spec.seed, column_values)
    if len(split.train) == 0:
        raise DataError("the training split is empty")
    return split


def training_targets(table: MoleculeTable, per_atom: bool) -> np.ndarray:
    return table.targets / per_atom_counts(table.graphs) if per_atom else table.targets


def make_task(
    train_targets: np.ndarray,
    target_columns: Sequence[str],
    task_type: TaskType = "regression",
    units: Sequence[str] = (),
    per_atom: bool = False,
) -> TaskConfig:
    """The task with its target scaler fitted on ``train_targets`` (n_train, T) (identity for
    classification, whose targets must be 0/1 or NaN); ``units`` default to blank."""
    if task_type == "classification":
        bad = ~np.isin(train_targets[np.isfinite(train_targets)], [0.0, 1.0])
        if bad.any():
            raise DataError("classification targets must be 0/1 (blank for missing)")
        scaler = TargetScaler.identity(train_targets.shape[1])
    else:
        scaler = TargetScaler.fit(train_targets)
    units = tuple(units) if units else ("",) * len(target_columns)
    return TaskConfig(tuple(target_columns), task_type, units, scaler.mean, scaler.std, per_atom)


def model_targets(task: TaskConfig, targets: np.ndarray) -> np.ndarray:
    """Targets as the model learns them: scaled for regression, 0/1 for classification."""
    if task.task_type == "classification":
        return targets
    return task.scaler.transform(targets)


def training_datasets(
    table: MoleculeTable, split: Split, task: TaskConfig
) -> tuple[GraphDataset, GraphDataset]:
    """(train, val) datasets with the targets the model learns."""
    y = model_targets(task, training_targets(table, task.per_atom))
    train = GraphDataset([table.graphs[i] for i in split.train], y[split.train])
    val = GraphDataset([table.graphs[i] for i in split.val], y[split.val])
    return train, val


@dataclass(frozen=True)
class LabelledSet:
    """Molecules with labels: featurised ``items`` (a graph, or the Exception of a failed
    row), their ``smiles`` (for the applicability domain; None for structures without one) and
    ``targets`` (n, T), NaN for a missing label; ``low`` (n, T_low): the measured
    low-fidelity labels a transfer model trained on them predicts from (else None)."""

    items: Sequence[MolGraph | Exception]
    smiles: Sequence[str] | None
    targets: np.ndarray
    low: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.items)


def table_set(
    table: MoleculeTable, idx: Sequence[int] | np.ndarray, low: np.ndarray | None = None
) -> LabelledSet:
    """The rows ``idx`` of a featurised table (graphs, SMILES, targets; ``low``: the table's
    (n, T_low) measured low-fidelity labels, or None)."""
    idx = np.asarray(idx, dtype=np.int64)
    return LabelledSet(
        [table.graphs[i] for i in idx],
        [table.smiles[i] for i in idx],
        table.targets[idx],
        None if low is None else np.asarray(low)[idx],
    )


def subset(data: LabelledSet, idx: Sequence[int] | np.ndarray) -> LabelledSet:
    """The rows ``idx`` of ``data``."""
    idx = np.asarray(idx, dtype=np.int64)
    return LabelledSet(
        [data.items[i] for i in idx],
        None if data.smiles is None else [data.smiles[i] for i in idx],
        np.asarray(data.targets)[idx],
        None if data.low is None else np.asarray(data.low)[idx],
    )
