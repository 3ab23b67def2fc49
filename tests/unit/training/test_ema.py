"""Weight averaging (EMA): what is validated and kept is the bias-corrected average of the
raw weights after each step, with decay 1 - 1 / (ema_epochs * steps per epoch)."""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest
import torch

from molprop.data.loader import GraphDataset, make_loader
from molprop.data.scaling import TargetScaler
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig
from molprop.training.fit import build_model
from molprop.training.lightning_module import LitMolProp

F = Graph2DFeaturizer()


class StepRecorder(L.Callback):
    """Raw trainable weights after every optimiser step, and the step count at each epoch end."""

    def __init__(self) -> None:
        self.steps: list[dict[str, torch.Tensor]] = []
        self.epoch_ends: list[int] = []

    def on_train_batch_end(self, trainer, lit, outputs, batch, batch_idx) -> None:
        named = lit.model.named_parameters()
        self.steps.append({n: p.detach().clone() for n, p in named if p.requires_grad})

    def on_train_epoch_end(self, trainer, lit) -> None:
        self.epoch_ends.append(len(self.steps))


def _fit(esol_frame, ema_epochs: float, epochs: int = 4):
    smiles, y = esol_frame["smiles"].tolist()[:120], esol_frame[["logp"]].to_numpy()[:120]
    graphs = [F.from_smiles(s) for s in smiles]
    scaler = TargetScaler.fit(y[:80])
    train = GraphDataset(graphs[:80], scaler.transform(y[:80]))
    val = GraphDataset(graphs[80:], scaler.transform(y[80:]))
    cfg = ModelConfig(
        node_dim=F.node_dim,
        edge_dim=F.edge_dim,
        n_tasks=1,
        hidden_dim=16,
        heads=2,
        num_seeds=2,
        layers="MSP",
        head_hidden=16,
        dropout=0.0,
    )
    L.seed_everything(0, verbose=False)
    lit = LitMolProp(build_model(cfg, 0), "regression", lr=3e-3, ema_epochs=ema_epochs)
    rec = StepRecorder()
    trainer = L.Trainer(
        max_epochs=epochs,
        callbacks=[rec],
        logger=False,
        accelerator="cpu",
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(
        lit, make_loader(train, 16, shuffle=True, seed=0), make_loader(val, 16, shuffle=False)
    )
    return lit, rec, val


def _val_loss(lit: LitMolProp, state: dict[str, torch.Tensor], val: GraphDataset) -> float:
    lit.model.load_state_dict(state)
    lit.model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for batch in make_loader(val, 16, shuffle=False):
            total += float(lit._loss(batch)) * batch.num_graphs
            n += batch.num_graphs
    return total / n


@pytest.mark.parametrize("ema_epochs", [1.0, 0.5])
def test_kept_weights_are_the_bias_corrected_average(esol_frame, ema_epochs: float) -> None:
    lit, rec, val = _fit(esol_frame, ema_epochs)
    steps_per_epoch = rec.epoch_ends[0]
    d = 1.0 - 1.0 / max(1.0, ema_epochs * steps_per_epoch)
    end = rec.epoch_ends[lit.best_epoch]
    weights = np.asarray([(1 - d) * d ** (end - 1 - i) for i in range(end)])
    weights /= weights.sum()
    for name, kept in lit.best_state.items():
        if name not in rec.steps[0]:
            continue
        expected = sum(w * step[name] for w, step in zip(weights, rec.steps[:end]))
        torch.testing.assert_close(kept, expected, atol=2e-6, rtol=1e-5)
    raw = rec.steps[end - 1]
    assert any((lit.best_state[n] - raw[n]).abs().max() > 1e-4 for n in raw), "average == raw"
    # the monitored validation loss is the averaged weights' loss (not the raw weights')
    assert _val_loss(lit, lit.best_state, val) == pytest.approx(lit.best_score, rel=1e-4)


def test_training_continues_from_the_raw_weights(esol_frame) -> None:
    lit, rec, _ = _fit(esol_frame, 1.0, epochs=2)  # validation swapped the average in and out
    for name, value in lit.model.named_parameters():
        torch.testing.assert_close(value.detach(), rec.steps[-1][name], atol=0, rtol=0)


def test_without_averaging_the_raw_weights_are_kept(esol_frame) -> None:
    lit, rec, val = _fit(esol_frame, 0.0, epochs=3)
    raw = rec.steps[rec.epoch_ends[lit.best_epoch] - 1]
    for name, value in raw.items():
        torch.testing.assert_close(lit.best_state[name], value, atol=0, rtol=0)
    assert _val_loss(lit, lit.best_state, val) == pytest.approx(lit.best_score, rel=1e-4)
