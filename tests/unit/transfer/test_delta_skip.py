"""Δ-learning and the linear skip of label augmentation: the model starts at the least-squares
fit, the Δ skip stays frozen, old configs load without a skip; measured low labels are parsed
per row; cross-fitting folds group molecules; ``delta-measured`` trains on the measured-label
residual plus the skip's fit (training split only) and is refused in transductive mode."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from molprop.artifact.config import Augmentation
from molprop.data.batch import collate_graphs
from molprop.data.loader import GraphDataset
from molprop.errors import ConfigError
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.inference.augment import parse_low_rows
from molprop.models.config import ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.training.fit import fit_member
from molprop.transfer.crossfit import assign_folds
from molprop.transfer.finetune import AugmentationInputs, FinetuneData, part_targets
from molprop.transfer.strategies import get_strategy, linear_fit

TINY = dict(hidden_dim=16, heads=2, layers="MSP", num_seeds=4, head_hidden=16)


@pytest.fixture(scope="module")
def esol(esol_frame):
    feat = Graph2DFeaturizer()
    sub = esol_frame.iloc[:40]
    graphs = [feat.from_smiles(s) for s in sub["smiles"]]
    y = sub["logp"].to_numpy()[:, None]
    y = (y - y.mean()) / y.std()
    # a "low-fidelity" input correlated with y, plus noise
    x = 0.8 * y + 0.3 + np.random.default_rng(0).normal(0, 0.3, y.shape)
    return graphs, x, y


def _config(graphs, strategy: str) -> ModelConfig:
    g = graphs[0]
    base = ModelConfig(node_dim=g.x.shape[1], edge_dim=g.edge_attr.shape[1], n_tasks=1, **TINY)
    return get_strategy(strategy).model_config(base, 1, 1)


def _forward(model: MolPropModel, graphs, x: np.ndarray) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model(collate_graphs(graphs, extra=x)).numpy()


def test_linear_fit_is_least_squares_and_skips_missing_rows():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 1))
    y = 2.5 * x + 0.7 + rng.normal(0, 0.01, size=(50, 1))
    y[3, 0] = np.nan  # a missing label is left out, not fitted as 0
    w, b = linear_fit(x, y)
    ok = np.isfinite(y[:, 0])
    slope, intercept = np.polyfit(x[ok, 0], y[ok, 0], 1)
    assert w[0, 0] == pytest.approx(slope, rel=1e-9) and b[0] == pytest.approx(intercept)
    with pytest.raises(ConfigError, match="labelled training rows"):
        linear_fit(x[:1], y[:1])


def test_label_augment_starts_exactly_at_the_linear_fit(esol):
    graphs, x, y = esol
    torch.manual_seed(0)
    model = MolPropModel.from_config(_config(graphs, "label-augment"))
    assert model.head.in_dim == model.readout.out_dim + 1 and model.skip is not None
    w, b = linear_fit(x, y)
    get_strategy("label-augment").init_skip(model, w, b)
    pred = _forward(model, graphs, x)
    np.testing.assert_allclose(pred, x @ w.T + b, atol=1e-5)  # head contributes 0 at start
    assert model.skip.weight.requires_grad  # the skip trains with the rest


def test_delta_skip_stays_frozen_and_the_network_learns_the_residual(esol):
    graphs, x, y = esol
    torch.manual_seed(0)
    model = MolPropModel.from_config(_config(graphs, "delta"))
    assert model.head.in_dim == model.readout.out_dim  # the network never sees x
    w, b = linear_fit(x, y)
    get_strategy("delta").init_skip(model, w, b)
    before = _forward(model, graphs, x)
    fit_member(
        model,
        GraphDataset(graphs, y, x),
        None,
        TrainConfig(epochs=2, lr=1e-2, batch_size=16),
        seed=0,
        progress=False,
        task_type="regression",
    )
    assert torch.equal(model.skip.weight, torch.as_tensor(w, dtype=torch.float32))
    after = _forward(model, graphs, x)
    assert not np.allclose(before, after)  # the residual network trained
    # the fit is added back: moving x by 1 moves every prediction by exactly w
    np.testing.assert_allclose(_forward(model, graphs, x + 1.0) - after, w[0, 0], atol=1e-5)


def test_configs_written_before_the_skip_load_as_before(esol):
    graphs, _, _ = esol
    legacy = _config(graphs, "full").to_dict()
    assert "extra_skip" not in legacy and "extra_to_head" not in legacy  # earlier layout
    legacy["n_extra"] = 1
    cfg = ModelConfig.from_dict(legacy)
    assert cfg.extra_to_head and not cfg.extra_skip
    model = MolPropModel.from_config(cfg)
    assert model.skip is None and model.n_extra == 1
    assert all(not k.startswith("skip.") for k in model.state_dict())
    old = {"kind": "label", "source": "pretrained", "mean": [1.0], "std": [2.0]}
    aug = Augmentation.from_dict(old)
    assert (
        aug.input == "predicted"
        and not aug.needs_measured
        and json.loads(json.dumps(aug.to_dict())) == old
    )
    new = Augmentation("label", "pretrained", (1.0,), (2.0,), "measured", ("ip_b3lyp",))
    assert Augmentation.from_dict(new.to_dict()) == new and new.needs_measured


def test_low_labels_are_parsed_per_row_with_the_row_named():
    values, errors = parse_low_rows([8.1, "abc", None, "nan", " 7.5 ", [1.0, 2.0]], 6, ["ip"])
    assert errors[0] == "" and errors[4] == ""
    assert values[0, 0] == 8.1 and values[4, 0] == 7.5
    assert "row 1" in errors[1] and "'abc' is not a number" in errors[1]
    assert "row 2" in errors[2] and "missing" in errors[2]
    assert "row 3" in errors[3] and "missing" in errors[3]
    assert "row 5" in errors[5] and "needs 1" in errors[5]
    with pytest.raises(ConfigError, match="3 low-fidelity values for 2 rows"):
        parse_low_rows([1, 2, 3], 2, ["ip"])


def test_cross_fit_folds_keep_duplicates_together_and_are_balanced():
    keys = [f"K{i}" for i in range(30)] + ["K0", "K1"]
    fold = assign_folds(keys, 3, seed=0)
    assert fold[30] == fold[0] and fold[31] == fold[1]
    assert sorted(np.bincount(fold[:30])) == [10, 10, 10]
    assert not np.array_equal(fold, assign_folds(keys, 3, seed=1))  # seeded


def _fidelities(n: int, seed: int = 0):
    """(high, measured low, a noisy prediction x of low), (n, 1) each: low explains high up to
    a small residual, x carries a large error of its own (the pretrained model's)."""
    rng = np.random.default_rng(seed)
    low = rng.normal(8.0, 0.9, size=(n, 1))
    high = 1.05 * low + 0.4 + rng.normal(0, 0.13, size=(n, 1))
    x = 0.9 * low + 0.5 + rng.normal(0, 0.4, size=(n, 1))
    return high, low, x


def test_delta_measured_trains_on_the_measured_residual_plus_the_skip_fit_on_train_only():
    high, low, x = _fidelities(60)
    high[5, 0] = np.nan  # an unlabelled training row stays unlabelled
    low[7, 0] = np.nan  # no measured low label: no target (masked), not a made-up one
    val = np.random.default_rng(1).normal(8.0, 1.0, size=(20, 1))
    test = np.random.default_rng(2).normal(8.0, 1.0, size=(30, 1))
    parts = {k: SimpleNamespace(targets=v) for k, v in (("train", high), ("val", val))}
    parts["test"] = SimpleNamespace(targets=test)
    data = FinetuneData(parts, {k: None for k in parts}, train_low=low)  # type: ignore[arg-type]
    inputs = AugmentationInputs({}, None, {}, raw_train=x)
    targets, report = part_targets(data, inputs, ["ip_b3lyp"])
    # the expected targets, from two independent least-squares fits over the usable rows
    ok_low = np.isfinite(high[:, 0]) & np.isfinite(low[:, 0])
    a, b = np.polyfit(low[ok_low, 0], high[ok_low, 0], 1)
    ok_x = np.isfinite(high[:, 0])
    a_x, b_x = np.polyfit(x[ok_x, 0], high[ok_x, 0], 1)
    expected = high[:, 0] - (a * low[:, 0] + b) + (a_x * x[:, 0] + b_x)
    np.testing.assert_allclose(targets["train"][:, 0], expected, rtol=1e-10, atol=1e-10)
    assert np.isnan(targets["train"][[5, 7], 0]).all()
    # validation and test keep the measured high labels (early stopping on the real thing)
    assert targets["val"] is val and targets["test"] is test
    # the skip's fit of x plus a residual far smaller than x's own error around it
    residual = targets["train"][:, 0] - (a_x * x[:, 0] + b_x)
    noisy = high[:, 0] - (a_x * x[:, 0] + b_x)
    assert np.nanstd(residual) < 0.5 * np.nanstd(noisy)
    assert report is not None and "MEASURED" in report["note"] and "ip_b3lyp" in report["note"]
    assert report["low_weight"][0][0] == pytest.approx(a) and report["x_bias"][0] == pytest.approx(
        b_x
    )
    assert report["train_residual_rmse"][0] == pytest.approx(np.sqrt(np.nanmean(residual**2)))


def test_other_strategies_train_on_the_measured_high_labels():
    high, _, x = _fidelities(30)
    data = FinetuneData({"train": SimpleNamespace(targets=high)}, {"train": None})  # type: ignore[dict-item]
    targets, report = part_targets(data, AugmentationInputs({}, None, {}, raw_train=x), [])
    assert targets["train"] is high and report is None


def test_delta_measured_is_inductive_only():
    assert get_strategy("delta-measured", "inductive").name == "delta-measured"
    with pytest.raises(ConfigError, match="inductive only"):
        get_strategy("delta-measured", "transductive")
    cfg = _config_from_dims("delta-measured")
    assert cfg.extra_skip and not cfg.extra_to_head  # delta's network: skip only
    model = get_strategy("delta-measured").init_skip(
        MolPropModel.from_config(cfg), np.ones((1, 1)), np.zeros(1)
    )
    assert not model.skip.weight.requires_grad  # the skip's fit stays as fitted


def _config_from_dims(strategy: str) -> ModelConfig:
    base = ModelConfig(node_dim=8, edge_dim=4, n_tasks=1, **TINY)
    return get_strategy(strategy).model_config(base, 1, 1)
