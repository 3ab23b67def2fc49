"""``molprop pretrain``: train on low-fidelity labels, a fixed epoch budget or early stopping on
a random held-out slice of the pretraining set. A thin layer over :func:`run_train`."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pandas as pd

from molprop.artifact import Artifact
from molprop.errors import ConfigError, MolpropError
from molprop.io.table import read_table
from molprop.training.train import TrainRequest, TrainResult, run_train

log = logging.getLogger(__name__)


def pretrain_request(request: TrainRequest, holdout: float) -> TrainRequest:
    """``holdout`` = 0: every molecule trains for the fixed epoch budget (train loss monitored);
    0 < holdout < 1: that random fraction is held out for early stopping."""
    if not 0.0 <= holdout < 1.0:
        raise ConfigError(f"--holdout must be in [0, 1), got {holdout}")
    return replace(
        request, split_type="random", split_sizes=(1.0 - holdout, holdout, 0.0), split_column=None
    )


def run_pretrain(request: TrainRequest, holdout: float = 0.1) -> TrainResult:
    """Train the low-fidelity model and write its artifact."""
    return run_train(pretrain_request(request, holdout))


def same_recipe(request: TrainRequest, holdout: float) -> bool:
    """Whether ``request.out`` already holds the model this pretraining would train: the same
    training settings (seed included), model overrides, molecules (``split.csv``, in order)
    and held-out fraction. Anything unreadable or different: False."""
    out = Artifact(Path(request.out))
    try:
        config = out.read_config()
        split = out.read_split()
        frame = request.data if isinstance(request.data, pd.DataFrame) else read_table(request.data)
    except (OSError, ValueError, KeyError, MolpropError):
        return False
    if split is None or config.train != request.train:
        return False
    model = config.model.__dict__
    if any(model.get(key) != value for key, value in request.model.items()):
        return False
    if config.featurizer.to_dict() != request.featurizer.to_dict():
        return False
    if list(config.task.target_names) != list(request.target_columns):
        return False
    smiles = frame[request.smiles_column].astype(str).tolist()
    if split["smiles"].astype(str).tolist() != smiles:
        return False
    n_val = int((split["split"] == "val").sum())
    return abs(n_val / max(len(split), 1) - holdout) <= 1.0 / max(len(split), 1) + 1e-9


def pretrain_or_reuse(request: TrainRequest, holdout: float = 0.1) -> bool:
    """Pretrain unless :func:`same_recipe` finds the identical model in ``request.out``;
    True when it was reused (then nothing is trained or written)."""
    if same_recipe(request, holdout):
        log.info("pretraining: reusing %s (same recipe, molecules and seed)", request.out)
        return True
    run_pretrain(request, holdout)
    return False
