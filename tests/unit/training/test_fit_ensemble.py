"""The one ensemble loop (train and finetune): member m is built and trained with seed + m, logs
in out/logs/member_m; an empty validation set means the training loss is monitored."""

from __future__ import annotations

import torch

from molprop.data.loader import GraphDataset
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig, TrainConfig
from molprop.training.fit import build_model, fit_ensemble, fit_member


def test_members_get_seed_plus_index_and_their_own_log_dirs(esol_frame, tmp_path):
    feat = Graph2DFeaturizer()
    graphs = [feat.from_smiles(s) for s in esol_frame["smiles"].iloc[:24]]
    y = esol_frame[["logp"]].to_numpy()[:24]
    y = (y - y.mean()) / y.std()
    config = ModelConfig(
        node_dim=graphs[0].x.shape[1],
        edge_dim=graphs[0].edge_attr.shape[1],
        n_tasks=1,
        hidden_dim=8,
        heads=2,
        layers="MP",
        num_seeds=2,
        head_hidden=8,
    )
    cfg = TrainConfig(epochs=1, batch_size=8, lr=1e-3, seed=5, ensemble_size=2)
    calls = []

    def make_member(m: int, seed: int):
        calls.append((m, seed))
        return build_model(config, seed)

    train, empty_val = GraphDataset(graphs, y), GraphDataset([], y[:0])
    fitted = fit_ensemble(
        make_member, train, empty_val, cfg, tmp_path, progress=False, task_type="regression"
    )
    assert calls == [(0, 5), (1, 6)]
    assert len(fitted.members) == len(fitted.summaries) == 2
    assert all("best_train_loss" in s for s in fitted.summaries)  # empty val: train loss
    for m in (0, 1):
        assert (tmp_path / "logs" / f"member_{m}" / "metrics.csv").exists()
    # member 1 is exactly what one fit_member call with seed 6 gives
    alone, _ = fit_member(
        build_model(config, 6), train, None, cfg, 6, progress=False, task_type="regression"
    )
    state = fitted.members[1].state_dict()
    assert all(torch.equal(v, state[k]) for k, v in alone.state_dict().items())
