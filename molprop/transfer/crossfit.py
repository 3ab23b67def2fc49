"""Cross-fitting of inductive label augmentation: out-of-fold low-fidelity predictions for the
high-fidelity training molecules.

In inductive mode the pretrained model has seen the training molecules' low labels, so its
predictions on them are in-sample (much better than on new molecules) and a head trained on
them over-trusts them. Here the training molecules are split into K folds (seeded, by InChIKey);
fold model k is pretrained with the pretrained model's own recipe (architecture, featuriser,
training settings) on the low-fidelity set minus fold k's molecules, and predicts fold k. The
validation/test (and served) inputs stay the full pretrained model's predictions.

Fold models live in ``CrossFit.out/fold_k`` with ``heldout.json`` (the InChIKeys left out);
a fold model whose held-out molecules and pretraining recipe match is reused, not retrained (so
the strategies of one benchmark seed share them, and a rerun into the same directory reuses
them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.artifact.config import ArtifactConfig
from molprop.chem.smiles import inchikey
from molprop.errors import ConfigError, DataError, InvalidInputError
from molprop.graph import MolGraph
from molprop.inference.augment import PretrainedSource
from molprop.io.table import read_table
from molprop.training.train import TrainRequest
from molprop.transfer.fidelity_split import KEY_COLUMN
from molprop.transfer.pretrain import run_pretrain, same_recipe

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrossFit:
    """``pretrain_data``: the low-fidelity table the pretrained model was trained on (SMILES
    and its target columns); ``folds`` K >= 2; ``out``: where the fold models go;
    ``holdout``: the pretraining early-stopping fraction (as ``molprop pretrain --holdout``)."""

    pretrain_data: str | Path | pd.DataFrame
    out: str | Path
    folds: int = 3
    holdout: float = 0.1
    smiles_column: str = "smiles"

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ConfigError(f"cross-fitting needs at least 2 folds, got {self.folds}")


def molecule_keys(smiles: Sequence[object]) -> list[str]:
    """InChIKey per SMILES; an unparsable one keeps its text (it matches only itself)."""
    keys = []
    for smi in smiles:
        try:
            keys.append(inchikey(str(smi)))
        except InvalidInputError:
            keys.append(f"unparsable:{smi}")
    return keys


def assign_folds(keys: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """Fold index per row; rows sharing a key share a fold; seeded, balanced by molecule."""
    unique = sorted(set(keys))
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[j]: i % folds for i, j in enumerate(order)}
    return np.array([fold_of[k] for k in keys], dtype=int)


def _pretrain_frame(cf: CrossFit) -> pd.DataFrame:
    frame = (
        cf.pretrain_data.copy()
        if isinstance(cf.pretrain_data, pd.DataFrame)
        else read_table(cf.pretrain_data)
    )
    if cf.smiles_column not in frame.columns:
        raise DataError(f"pretraining table has no column {cf.smiles_column!r}")
    if KEY_COLUMN not in frame.columns:
        frame[KEY_COLUMN] = molecule_keys(frame[cf.smiles_column].tolist())
    return frame


def _fold_model(
    cf: CrossFit, pre: ArtifactConfig, frame: pd.DataFrame, held: set[str], k: int, seed: int
) -> Path:
    fold_dir = Path(cf.out) / f"fold_{k}"
    marker = fold_dir / "heldout.json"
    keep = ~frame[KEY_COLUMN].isin(held)
    overrides = {
        k2: v for k2, v in pre.model.to_dict().items() if k2 not in ("node_dim", "edge_dim")
    }
    overrides.pop("n_tasks")
    request = TrainRequest(
        data=frame[keep].reset_index(drop=True),
        smiles_column=cf.smiles_column,
        target_columns=list(pre.task.target_names),
        out=fold_dir,
        featurizer=pre.featurizer,
        model=overrides,
        train=replace(pre.train, seed=seed + 1000 * (k + 1)),
        units=list(pre.task.units),
        per_atom=pre.task.per_atom,
        progress=False,
    )
    # reused only when it held out these molecules AND was trained with this recipe (a fold
    # model of an earlier, different pretraining in the same directory is retrained)
    if marker.exists() and set(json.loads(marker.read_text())) == held:
        if same_recipe(request, cf.holdout):
            log.info("cross-fit fold %d: reusing %s", k, fold_dir)
            return fold_dir
    log.info("cross-fit fold %d: pretraining on %d of %d rows", k, int(keep.sum()), len(frame))
    run_pretrain(request, cf.holdout)
    marker.write_text(json.dumps(sorted(held)))
    return fold_dir


def out_of_fold_predictions(
    cf: CrossFit,
    pre: ArtifactConfig,
    smiles: Sequence[object],
    graphs: Sequence[MolGraph],
    seed: int,
) -> tuple[np.ndarray, dict]:
    """(n, T_low) out-of-fold predictions of the low label for the training rows (``smiles``
    and their ``graphs``), and a report (folds, rows per fold, fold model directories)."""
    frame = _pretrain_frame(cf)
    keys = molecule_keys(smiles)
    fold = assign_folds(keys, cf.folds, seed)
    out = np.full((len(graphs), len(pre.task.target_names)), np.nan)
    dirs = []
    for k in range(cf.folds):
        rows = np.flatnonzero(fold == k)
        if len(rows) == 0:
            continue
        held = {keys[i] for i in rows}
        fold_dir = _fold_model(cf, pre, frame, held, k, seed)
        dirs.append(str(fold_dir))
        out[rows] = PretrainedSource(fold_dir).low_predictions([graphs[i] for i in rows.tolist()])
    report = {
        "folds": cf.folds,
        "rows_per_fold": np.bincount(fold, minlength=cf.folds).tolist(),
        "fold_models": dirs,
    }
    return out, report
