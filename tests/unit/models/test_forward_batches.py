"""Inference batching (token budget on CPU) must not change any prediction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from molprop.featurize import Graph2DFeaturizer
from molprop.models import predict as predict_module
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import forward_members

F = Graph2DFeaturizer()


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_predictions_do_not_depend_on_the_token_budget(esol_frame, monkeypatch, kind):
    graphs = [F.from_smiles(s) for s in esol_frame["smiles"][:300]]
    torch.manual_seed(0)
    cfg = ModelConfig(
        node_dim=F.node_dim,
        edge_dim=F.edge_dim,
        n_tasks=1,
        token_kind=kind,
        hidden_dim=32,
        heads=4,
        num_seeds=4,
    )
    model = MolPropModel.from_config(cfg).eval()
    monkeypatch.setattr(predict_module, "CPU_MAX_TOKENS", 10**9)  # whole batches of 256
    whole = forward_members([model], graphs, device=torch.device("cpu"))
    monkeypatch.setattr(predict_module, "CPU_MAX_TOKENS", 200)  # many small batches
    budget = forward_members([model], graphs, device=torch.device("cpu"))
    np.testing.assert_allclose(budget, whole, rtol=0, atol=1e-5)
    assert np.ptp(whole) > 1e-3  # the molecules do get different predictions
