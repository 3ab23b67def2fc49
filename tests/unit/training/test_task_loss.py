"""The loss takes its task type from the task (TaskConfig.task_type), not from the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from molprop.cli.options import train_config
from molprop.data.batch import collate_graphs
from molprop.errors import ConfigError
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import LOSSES, ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.training.lightning_module import LitMolProp

FEAT = Graph2DFeaturizer()


def tiny_model(n_tasks: int) -> MolPropModel:
    cfg = ModelConfig(
        node_dim=FEAT.node_dim,
        edge_dim=FEAT.edge_dim,
        n_tasks=n_tasks,
        hidden_dim=8,
        heads=2,
        num_seeds=2,
        head_hidden=8,
    )
    torch.manual_seed(0)
    return MolPropModel.from_config(cfg).eval()


def test_loss_follows_the_task_type() -> None:
    graphs = [FEAT.from_smiles(s) for s in ("CCO", "c1ccccc1", "CC(=O)N")]
    batch = collate_graphs(graphs, np.array([[1.0], [0.0], [1.0]]))
    model = tiny_model(1)
    with torch.no_grad():
        pred = model(batch)
        bce = LitMolProp(model, "classification")._loss(batch)
        mse = LitMolProp(model, "regression")._loss(batch)
    torch.testing.assert_close(bce, F.binary_cross_entropy_with_logits(pred, batch.y))
    torch.testing.assert_close(mse, F.mse_loss(pred, batch.y))
    with pytest.raises(ConfigError, match="task type"):
        LitMolProp(model, "ranking")  # type: ignore[arg-type]


# ----------------------------------------------------------------- --loss


def _batch_and_model():
    graphs = [FEAT.from_smiles(s) for s in ("CCO", "c1ccccc1", "CC(=O)N", "CCCCCC")]
    # targets far from the untrained predictions (|error| > 1 for Huber's linear part), one missing
    y = np.array([[3.0, 0.1], [-2.5, np.nan], [0.2, 4.0], [-0.3, -0.2]])
    return collate_graphs(graphs, y), tiny_model(2)


@pytest.mark.parametrize("loss", ["mse", "mae", "huber"])
def test_regression_loss_is_the_chosen_one_over_labelled_entries(loss) -> None:
    batch, model = _batch_and_model()
    with torch.no_grad():
        pred = model(batch)
        got = LitMolProp(model, "regression", loss=loss)._loss(batch)
    m = batch.y_mask
    err = (pred - batch.y)[m]
    want = {
        "mse": (err**2).mean(),
        "mae": err.abs().mean(),
        "huber": torch.where(err.abs() < 1, 0.5 * err**2, err.abs() - 0.5).mean(),
    }[loss]
    torch.testing.assert_close(got, want)
    assert (err.abs() > 1).any() and (err.abs() < 1).any()  # both Huber regimes are exercised


def test_the_three_losses_differ_and_bad_names_are_refused() -> None:
    batch, model = _batch_and_model()
    with torch.no_grad():
        values = {k: float(LitMolProp(model, "regression", loss=k)._loss(batch)) for k in LOSSES}
    assert len({round(v, 6) for v in values.values()}) == 3
    with pytest.raises(ConfigError, match="loss"):
        LitMolProp(model, "regression", loss="l3")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="loss"):
        TrainConfig(loss="l3")  # type: ignore[arg-type]


def test_classification_keeps_bce_and_refuses_another_loss() -> None:
    _, model = _batch_and_model()
    with pytest.raises(ConfigError, match="binary cross-entropy"):
        LitMolProp(model, "classification", loss="mae")
    for cmd in ("train", "finetune", "pretrain"):
        args = _cli_args(cmd, "--task-type", "classification", "--loss", "mae")
        with pytest.raises(ConfigError, match="binary cross-entropy"):
            train_config(args)
    assert train_config(_cli_args("train", "--task-type", "classification")).loss == "mse"


@pytest.mark.parametrize("cmd", ["train", "finetune", "pretrain"])
def test_every_training_command_takes_and_stores_the_loss(cmd) -> None:
    cfg = train_config(_cli_args(cmd, "--loss", "huber"))
    assert cfg.loss == "huber"
    assert TrainConfig.from_dict(cfg.to_dict()).loss == "huber"
    assert train_config(_cli_args(cmd)).loss == "mse"


def test_configs_written_before_the_option_load_with_squared_error() -> None:
    legacy = TrainConfig().to_dict()
    del legacy["loss"]
    assert TrainConfig.from_dict(legacy).loss == "mse"


def _cli_args(cmd: str, *extra: str):
    from molprop.cli.main import build_parser

    base = ["--data", "x.csv", "--target-columns", "y", "--out", "o"]
    if cmd == "finetune":
        base += ["--from", "p"]
    return build_parser().parse_args([cmd, *base, *extra])
