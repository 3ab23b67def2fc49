"""LR schedules: ``warmup_decay`` warms up linearly to ``lr`` then decays exponentially to
``lr * lr_floor`` at the last step of a real (tiny) training run; ``plateau`` stays the default
and the default of old configs."""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest

from molprop.data.loader import GraphDataset
from molprop.data.scaling import TargetScaler
from molprop.errors import ConfigError
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig, TrainConfig
from molprop.training.fit import build_model, fit_member
from molprop.training.lightning_module import warmup_decay_factor

F = Graph2DFeaturizer()


class LrRecorder(L.Callback):
    """The learning rate each optimiser step uses."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_train_batch_start(self, trainer, lit, batch, batch_idx) -> None:
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


def test_factor_shape():
    f = [warmup_decay_factor(s, 10, 110, 0.1) for s in range(0, 121)]
    assert f[0] == pytest.approx(0.1) and f[5] == pytest.approx(0.55) and f[10] == 1.0
    assert np.all(np.diff(f[:11]) > 0) and np.all(np.diff(f[10:111]) < 0)
    assert f[60] == pytest.approx(0.1**0.5)  # exponential: halfway in steps = sqrt(floor)
    assert f[110] == pytest.approx(0.1) and f[120] == pytest.approx(0.1)  # the floor after
    assert warmup_decay_factor(0, 0, 50, 0.2) == 1.0  # no warm-up: starts at the peak


def _fit(esol_frame, cfg: TrainConfig) -> list[float]:
    smiles, y = esol_frame["smiles"].tolist()[:96], esol_frame[["logp"]].to_numpy()[:96]
    graphs = [F.from_smiles(s) for s in smiles]
    scaler = TargetScaler.fit(y[:64])
    train = GraphDataset(graphs[:64], scaler.transform(y[:64]))
    val = GraphDataset(graphs[64:], scaler.transform(y[64:]))
    model = build_model(
        ModelConfig(F.node_dim, F.edge_dim, 1, hidden_dim=16, heads=2, num_seeds=2, layers="MSP"),
        0,
    )
    rec = LrRecorder()
    fit_member(
        model, train, val, cfg, 0, None, False, task_type="regression", extra_callbacks=[rec]
    )
    return rec.lrs


def test_warmup_decay_lr_curve_in_training(esol_frame):
    cfg = TrainConfig(
        epochs=4, batch_size=16, lr=2e-3, schedule="warmup_decay", warmup_epochs=1, lr_floor=0.05
    )
    lrs = np.asarray(_fit(esol_frame, cfg))
    per_epoch = len(lrs) // 4
    assert len(lrs) == 4 * per_epoch and per_epoch >= 3
    warm, decay = lrs[: per_epoch + 1], lrs[per_epoch:]
    assert lrs[0] == pytest.approx(2e-3 * 0.05)  # starts at the floor
    assert np.all(np.diff(warm) > 0) and lrs[per_epoch] == pytest.approx(2e-3)  # peak after 1
    assert np.all(np.diff(decay) < 0)
    # exponential to the floor at the last step (the last used lr is one step before it)
    total = 4 * per_epoch
    assert lrs[-1] == pytest.approx(2e-3 * 0.05 ** ((total - 1 - per_epoch) / (total - per_epoch)))
    ratios = decay[1:] / decay[:-1]
    assert np.allclose(ratios, ratios[0])  # a constant factor per step


def test_plateau_is_the_default_and_old_configs_read_as_plateau(esol_frame):
    assert TrainConfig().schedule == "plateau"
    old = TrainConfig().to_dict()
    del old["schedule"], old["lr_floor"]
    assert TrainConfig.from_dict(old).schedule == "plateau"
    lrs = _fit(esol_frame, TrainConfig(epochs=2, batch_size=16, lr=1e-3))
    assert lrs == [1e-3] * len(lrs)  # no stall within 2 epochs: constant
    with pytest.raises(ConfigError, match="schedule"):
        TrainConfig(schedule="cosine")
