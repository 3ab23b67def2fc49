"""``molprop finetune``: pretrained artifact + table of (new) labels -> fine-tuned artifact.

Steps: resolve the pretrained artifact -> read train (and val/test, or split train) with the
pretrained featuriser -> fit a new scaler on the training labels -> build augmentation inputs
(label/embed strategies) -> per member: load pretrained weights strictly, re-initialise the head
when needed, freeze if asked, train with :func:`fit_member` -> evaluate -> write the artifact
(plus a copy of the pretrained artifact when prediction needs augmentation inputs).

Default for in-house assays (new target names): ``full`` fine-tuning with a fresh head, encoder
and readout loaded from the pretrained model, scaffold split 0.8/0.1/0.1 when no ``val`` table
is given, early stopping on validation loss.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from safetensors.torch import load_file

from molprop.artifact.augment import PretrainedSource, fit_augmentation, raw_features, standardise
from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
from molprop.artifact.resolve import resolve_model
from molprop.artifact.store import load_config, member_path, save_artifact
from molprop.data.loader import GraphDataset
from molprop.data.scaling import TargetScaler
from molprop.errors import ConfigError, DataError, InvalidInputError
from molprop.featurize import FeaturizerConfig
from molprop.io.table import MoleculeTable, parse_target
from molprop.models.config import TrainConfig
from molprop.training.fit import evaluate_split, fit_member
from molprop.training.train import TrainRequest, load_table, make_task, split_table
from molprop.transfer.strategies import (
    AUGMENT_KIND,
    check_strategy,
    finetune_model_config,
    freeze_encoder,
    init_from_pretrained,
    needs_fresh_head,
)

log = logging.getLogger(__name__)
MODES = ("transductive", "inductive")


@dataclass
class FinetuneRequest:
    """Everything ``molprop finetune`` needs. ``low_columns`` (default: the pretrained model's
    targets) are read only for ``label-augment`` in transductive mode."""

    pretrained: str | Path
    data: str | Path | pd.DataFrame
    target_columns: list[str]
    out: str | Path
    smiles_column: str = "smiles"
    val_data: str | Path | pd.DataFrame | None = None
    test_data: str | Path | pd.DataFrame | None = None
    strategy: str = "full"
    mode: str = "transductive"
    low_columns: list[str] | None = None
    task_type: str = "regression"
    split_type: str = "scaffold"
    split_sizes: tuple[float, float, float] = (0.8, 0.1, 0.1)
    split_column: str | None = None
    train: TrainConfig = field(default_factory=TrainConfig)
    units: list[str] = field(default_factory=list)
    invalid: str = "skip"
    name: str = ""
    progress: bool = True


@dataclass
class FinetuneData:
    """Featurised parts; ``low`` holds (n, T_low) measured low labels per part, or None."""

    parts: dict[str, MoleculeTable]
    low: dict[str, np.ndarray | None]


def _table(request: FinetuneRequest, data, featurizer: FeaturizerConfig) -> MoleculeTable:
    treq = TrainRequest(
        data=data,
        smiles_column=request.smiles_column,
        target_columns=request.target_columns,
        out=request.out,
        featurizer=featurizer,
        invalid=request.invalid,
        progress=request.progress,
    )
    return load_table(treq)


def measured_low(table: MoleculeTable, columns: list[str]) -> np.ndarray:
    """(n, T_low) measured low-fidelity labels of the table's valid rows (NaN if blank)."""
    if table.frame is None or any(c not in table.frame.columns for c in columns):
        raise DataError(
            f"label-augment (transductive) needs low-fidelity column(s) {columns} in every table"
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
    featurizer = pre.featurizer
    train = _table(request, request.data, featurizer)
    if request.val_data is not None:
        parts = {"train": train, "val": _table(request, request.val_data, featurizer)}
        if request.test_data is not None:
            parts["test"] = _table(request, request.test_data, featurizer)
    else:
        split = split_table(
            TrainRequest(
                data="",
                smiles_column=request.smiles_column,
                target_columns=request.target_columns,
                out=request.out,
                split_type=request.split_type,
                split_sizes=request.split_sizes,
                split_column=request.split_column,
                train=request.train,
            ),
            train,
        )
        parts = {
            "train": train.subset(split.train),
            "val": train.subset(split.val),
            "test": train.subset(split.test),
        }
    use_measured = request.strategy == "label-augment" and request.mode == "transductive"
    low_cols = request.low_columns or list(pre.task.target_names)
    low = {k: measured_low(t, low_cols) if use_measured else None for k, t in parts.items()}
    return FinetuneData(parts, low)


def copy_pretrained(src: Path, dest: Path) -> None:
    """Copy what prediction needs (config, weights, nested pretrained copies)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("logs", "*.csv", "metrics.json"))


def run_finetune(request: FinetuneRequest) -> dict:
    """Fine-tune and write the artifact to ``request.out``; -> metrics dict."""
    start = time.perf_counter()
    check_strategy(request.strategy)
    if request.mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {request.mode!r}")
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    pre_dir = resolve_model(request.pretrained)
    pre = load_config(pre_dir)
    data = load_parts(request, pre)
    train = data.parts["train"]
    treq = TrainRequest(
        data="",
        smiles_column=request.smiles_column,
        target_columns=request.target_columns,
        out=out,
        task_type=request.task_type,
        units=request.units,
    )
    task = make_task(treq, train.targets)  # the high-fidelity target's own scaler
    extra: dict[str, np.ndarray | None] = {k: None for k in data.parts}
    aug: Augmentation | None = None
    if request.strategy in AUGMENT_KIND:
        source = PretrainedSource(pre_dir)
        kind = AUGMENT_KIND[request.strategy]
        raw = {k: raw_features(kind, source, t.graphs, data.low[k]) for k, t in data.parts.items()}
        aug = fit_augmentation(kind, raw["train"])
        extra = {k: standardise(aug, v) for k, v in raw.items()}
    fresh = needs_fresh_head(request.strategy, pre, request.target_columns, request.task_type)
    config = finetune_model_config(
        pre.model,
        len(request.target_columns),
        request.task_type,
        0 if extra["train"] is None else extra["train"].shape[1],
    )
    scaler = TargetScaler(task.scaler_mean, task.scaler_std)

    def dataset(part: str) -> GraphDataset:
        t = data.parts[part]
        y = t.targets if task.task_type == "classification" else scaler.transform(t.targets)
        return GraphDataset(t.graphs, y, extra[part])

    train_ds = dataset("train")
    val_ds = dataset("val") if len(data.parts.get("val", [])) else None
    members, summaries = [], []
    cfg = request.train
    for m in range(cfg.ensemble_size):
        seed = cfg.seed + m
        src = member_path(pre_dir, m % pre.n_members)
        model = init_from_pretrained(config, load_file(str(src)), str(src), fresh, seed)
        if request.strategy == "freeze-encoder":
            freeze_encoder(model)
        log.info(
            "fine-tuning member %d/%d (%s, %s, fresh head: %s)",
            m + 1,
            cfg.ensemble_size,
            request.strategy,
            request.mode,
            fresh,
        )
        model, summary = fit_member(
            model, train_ds, val_ds, cfg, seed, out / "logs" / f"member_{m}", request.progress
        )
        members.append(model)
        summaries.append(summary)
    metrics = {
        k: evaluate_split(members, t.graphs, t.targets, task, extra[k])
        for k, t in data.parts.items()
    }
    metrics["training"] = {
        "members": summaries,
        "fresh_head": fresh,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "sizes": {k: len(t) for k, t in data.parts.items()},
    }
    provenance = Provenance(
        finetuned_from=str(pre_dir), strategy=request.strategy, mode=request.mode, fresh_head=fresh
    )
    if aug is not None:
        copy_pretrained(pre_dir, out / aug.source)
    artifact = ArtifactConfig(
        model=config,
        task=task,
        featurizer=pre.featurizer,
        train=cfg,
        n_members=len(members),
        name=request.name or out.name,
        provenance=provenance,
        augment=aug,
    )
    save_artifact(out, artifact, members)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    if "test" in metrics:
        log.info("test metrics: %s", metrics["test"]["ensemble"])
    return metrics
