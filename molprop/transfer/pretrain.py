"""``molprop pretrain``: train on low-fidelity labels, a fixed epoch budget or early stopping on
a random held-out slice of the pretraining set. A thin layer over :func:`run_train`."""

from __future__ import annotations

from dataclasses import replace

from molprop.errors import ConfigError
from molprop.training.train import TrainRequest, TrainResult, run_train


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
