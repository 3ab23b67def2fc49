"""The loss takes its task type from the task (TaskConfig.task_type), not from the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from molprop.data.batch import collate_graphs
from molprop.errors import ConfigError
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.training.lightning_module import LitMolProp

FEAT = Graph2DFeaturizer()


def test_loss_follows_the_task_type() -> None:
    graphs = [FEAT.from_smiles(s) for s in ("CCO", "c1ccccc1", "CC(=O)N")]
    batch = collate_graphs(graphs, np.array([[1.0], [0.0], [1.0]]))
    cfg = ModelConfig(
        node_dim=FEAT.node_dim,
        edge_dim=FEAT.edge_dim,
        n_tasks=1,
        hidden_dim=8,
        heads=2,
        num_seeds=2,
        head_hidden=8,
    )
    torch.manual_seed(0)
    model = MolPropModel.from_config(cfg).eval()
    with torch.no_grad():
        pred = model(batch)
        bce = LitMolProp(model, "classification")._loss(batch)
        mse = LitMolProp(model, "regression")._loss(batch)
    torch.testing.assert_close(bce, F.binary_cross_entropy_with_logits(pred, batch.y))
    torch.testing.assert_close(mse, F.mse_loss(pred, batch.y))
    with pytest.raises(ConfigError, match="task type"):
        LitMolProp(model, "ranking")  # type: ignore[arg-type]
