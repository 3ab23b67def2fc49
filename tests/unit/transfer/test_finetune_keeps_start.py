"""Fine-tuning from trained weights counts the starting weights as "epoch 0" of early stopping:
when no epoch beats them on validation they are kept (best_epoch -1), so a fine-tune never ends
worse on validation than the model it started from. Training from scratch is unaffected."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import torch
from safetensors.torch import load_file

from molprop.data.loader import GraphDataset
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.models.config import ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.pretrained_recipes import PRETRAINED
from molprop.training.fit import fit_member
from molprop.transfer.finetune import FinetuneRequest, run_finetune

TINY = dict(hidden_dim=16, heads=2, layers="MSP", num_seeds=4, head_hidden=16)


def _datasets(esol_frame):
    feat = Graph2DFeaturizer()
    sub = esol_frame.iloc[:64]
    graphs = [feat.from_smiles(s) for s in sub["smiles"]]
    y = sub["logp"].to_numpy()[:, None]
    y = (y - y.mean()) / y.std()
    return GraphDataset(graphs[:48], y[:48]), GraphDataset(graphs[48:], y[48:]), graphs[0]


def test_starting_weights_are_kept_when_no_epoch_beats_them(esol_frame):
    train, val, g = _datasets(esol_frame)
    config = ModelConfig(node_dim=g.x.shape[1], edge_dim=g.edge_attr.shape[1], n_tasks=1, **TINY)
    start = MolPropModel.from_config(config)  # any weights: the candidate is the start
    state = {k: v.clone() for k, v in start.state_dict().items()}
    wild = TrainConfig(epochs=2, lr=5.0, batch_size=16, ema_epochs=0)  # every step ruins it

    kept = MolPropModel.from_config(config)
    kept.load_state_dict(state)
    _, summary = fit_member(
        kept, train, val, wild, 0, progress=False, task_type="regression", start_candidate=True
    )
    assert summary["best_epoch"] == -1 and summary["start_val_loss"] == summary["best_val_loss"]
    for k, v in kept.state_dict().items():
        assert torch.equal(v, state[k]), k

    moved = MolPropModel.from_config(config)  # without the candidate: the best wild epoch
    moved.load_state_dict(state)
    _, plain = fit_member(moved, train, val, wild, 0, progress=False, task_type="regression")
    assert plain["best_epoch"] >= 0 and "start_val_loss" not in plain
    # scoring the start draws no random numbers: where an epoch wins, training is unchanged
    # (a start 3 standard deviations off: any step toward the labels beats it)
    off = {**state, "head.net.3.bias": state["head.net.3.bias"] + 3.0}
    gentle = TrainConfig(epochs=2, lr=1e-2, batch_size=16, ema_epochs=0)
    runs = []
    for candidate in (False, True):
        m = MolPropModel.from_config(replace(config, dropout=0.3))  # dropout draws numbers
        m.load_state_dict(off)
        _, s = fit_member(
            m,
            train,
            val,
            gentle,
            0,
            progress=False,
            task_type="regression",
            start_candidate=candidate,
        )
        runs.append((s["best_epoch"], m.state_dict()))
    (e0, w0), (e1, w1) = runs
    assert e0 == e1 >= 0
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert plain["best_val_loss"] > summary["best_val_loss"]
    assert any(not torch.equal(v, state[k]) for k, v in moved.state_dict().items())


def test_finetune_with_a_kept_head_keeps_the_shipped_weights_if_nothing_beats_them(
    esol_frame, tmp_path
):
    data = esol_frame.iloc[:60][["smiles", "logp"]]
    request = FinetuneRequest(
        pretrained="solubility",
        data=data.iloc[:45],
        val_data=data.iloc[45:],
        target_columns=["logp"],
        out=tmp_path / "ft",
        keep_head=True,
        train=TrainConfig(epochs=1, lr=5.0, ensemble_size=1, ema_epochs=0),
        progress=False,
    )
    run_finetune(request)
    metrics = pd.read_json(tmp_path / "ft" / "metrics.json", typ="series")
    member = metrics["training"]["members"][0]
    assert member["best_epoch"] == -1 and "start_val_loss" in member
    shipped = load_file(str(PRETRAINED / "solubility" / "members" / "0" / "model.safetensors"))
    tuned = load_file(str(tmp_path / "ft" / "members" / "0" / "model.safetensors"))
    assert shipped.keys() == tuned.keys()
    assert all(torch.equal(shipped[k], tuned[k]) for k in shipped)
