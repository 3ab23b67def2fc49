"""``molprop train``: table -> featurise -> split -> scale -> train N members -> artifact."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from molprop.artifact.config import ArtifactConfig, Provenance
from molprop.artifact.domain import add_domain_to_artifact
from molprop.artifact.store import save_artifact
from molprop.data.loader import GraphDataset
from molprop.data.scaling import TargetScaler
from molprop.data.splits import Split, make_split
from molprop.errors import DataError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.io.table import MoleculeTable, load_molecule_table
from molprop.models.config import ModelConfig, TaskConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import per_atom_counts
from molprop.training.fit import (
    build_model,
    evaluate_split,
    fit_member,
    is_global_zero,
)

log = logging.getLogger(__name__)


@dataclass
class TrainRequest:
    """Everything ``molprop train`` needs. ``model`` holds ModelConfig overrides."""

    data: str | Path | pd.DataFrame
    smiles_column: str
    target_columns: list[str]
    out: str | Path
    task_type: str = "regression"
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


def load_table(request: TrainRequest) -> MoleculeTable:
    featurizer = build_featurizer(request.featurizer)
    reader = getattr(featurizer, "load_table", None)
    if reader is not None:  # 3D featurisers read structure files (SDF, extxyz) themselves
        return reader(
            request.data, request.smiles_column, request.target_columns, invalid=request.invalid
        )
    return load_molecule_table(
        request.data,
        request.smiles_column,
        request.target_columns,
        featurizer.from_smiles,
        invalid=request.invalid,
        progress=request.progress,
    )


def split_table(request: TrainRequest, table: MoleculeTable) -> Split:
    column_values = None
    if request.split_type == "column":
        if table.frame is None or request.split_column not in table.frame.columns:
            raise DataError(f"split column {request.split_column!r} not found")
        column_values = table.frame[request.split_column].iloc[table.rows].tolist()
    split = make_split(
        request.split_type, table.smiles, request.split_sizes, request.train.seed, column_values
    )
    if len(split.train) == 0:
        raise DataError("the training split is empty")
    return split


def write_split(out: Path, table: MoleculeTable, split: Split) -> None:
    pd.DataFrame(
        {"row": table.rows, "smiles": table.smiles, "split": split.labels(len(table))}
    ).to_csv(out / "split.csv", index=False)
    if table.invalid:
        table.invalid_frame().to_csv(out / "invalid_rows.csv", index=False)


def training_targets(table: MoleculeTable, per_atom: bool) -> np.ndarray:
    return table.targets / per_atom_counts(table.graphs) if per_atom else table.targets


def make_task(request: TrainRequest, train_targets: np.ndarray) -> TaskConfig:
    if request.task_type == "classification":
        bad = ~np.isin(train_targets[np.isfinite(train_targets)], [0.0, 1.0])
        if bad.any():
            raise DataError("classification targets must be 0/1 (blank for missing)")
        scaler = TargetScaler.identity(train_targets.shape[1])
    else:
        scaler = TargetScaler.fit(train_targets)
    units = tuple(request.units) if request.units else ("",) * len(request.target_columns)
    return TaskConfig(
        tuple(request.target_columns),
        request.task_type,
        units,
        scaler.mean,
        scaler.std,
        request.per_atom,
    )


def train_members(
    model_config: ModelConfig,
    table: MoleculeTable,
    split: Split,
    task: TaskConfig,
    cfg: TrainConfig,
    out: Path,
    progress: bool = True,
) -> tuple[list[MolPropModel], list[dict]]:
    scaler = TargetScaler(task.scaler_mean, task.scaler_std)
    y = training_targets(table, task.per_atom)
    y = y if task.task_type == "classification" else scaler.transform(y)
    train_ds = GraphDataset([table.graphs[i] for i in split.train], y[split.train])
    val_ds = GraphDataset([table.graphs[i] for i in split.val], y[split.val])
    members, summaries = [], []
    for m in range(cfg.ensemble_size):
        seed = cfg.seed + m
        log.info("training member %d/%d (seed %d)", m + 1, cfg.ensemble_size, seed)
        model = build_model(model_config, seed)
        model, summary = fit_member(
            model,
            train_ds,
            val_ds if len(val_ds) else None,
            cfg,
            seed,
            out / "logs" / f"member_{m}",
            progress,
        )
        members.append(model)
        summaries.append(summary)
    return members, summaries


def evaluate_parts(members, table: MoleculeTable, split: Split, task: TaskConfig) -> dict:
    return {
        part: evaluate_split(members, [table.graphs[i] for i in idx], table.targets[idx], task)
        for part, idx in (("train", split.train), ("val", split.val), ("test", split.test))
    }


def size_invariant_overrides(request: TrainRequest, table: MoleculeTable) -> dict[str, Any]:
    """Model overrides with the size path turned off for ``--per-atom`` targets and for
    periodic systems (every graph carries image shifts): there a supercell must give the same
    per-atom / intensive prediction as its cell, which the size signal would break."""
    overrides = dict(request.model)
    periodic = all(g.edge_vec_shift is not None for g in table.graphs)
    if overrides.get("size_path", True) and (request.per_atom or periodic):
        log.info("size path off (%s)", "per-atom target" if request.per_atom else "periodic")
        overrides["size_path"] = False
    return overrides


def run_train(request: TrainRequest) -> dict:
    """Train and write the artifact to ``request.out``; returns the metrics dict."""
    start = time.perf_counter()
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    table = load_table(request)
    split = split_table(request, table)
    if is_global_zero():  # data parallel: only rank 0 writes files
        write_split(out, table, split)
    task = make_task(request, training_targets(table, request.per_atom)[split.train])
    g0 = table.graphs[0]
    model_config = ModelConfig(
        node_dim=g0.x.shape[1],
        edge_dim=g0.edge_attr.shape[1],
        n_tasks=len(request.target_columns),
        task_type=request.task_type,
        **size_invariant_overrides(request, table),
    )
    members, summaries = train_members(
        model_config, table, split, task, request.train, out, request.progress
    )
    metrics = evaluate_parts(members, table, split, task)
    if not is_global_zero():
        return metrics
    metrics["training"] = {
        "members": summaries,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "n_rows_valid": len(table),
        "n_rows_invalid": len(table.invalid),
        "split_sizes": {"train": len(split.train), "val": len(split.val), "test": len(split.test)},
    }
    data = "<DataFrame>" if isinstance(request.data, pd.DataFrame) else str(request.data)
    artifact = ArtifactConfig(
        model=model_config,
        task=task,
        featurizer=request.featurizer,
        train=request.train,
        n_members=len(members),
        name=request.name or out.name,
        provenance=Provenance(data=data, split_type=request.split_type),
    )
    save_artifact(out, artifact, members)
    if request.featurizer.kind == "2d":  # applicability domain over the training SMILES
        add_domain_to_artifact(out, [table.smiles[i] for i in split.train])
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    log.info("test metrics: %s", metrics["test"]["ensemble"])
    return metrics
