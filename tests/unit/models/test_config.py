"""Typed configuration with one home per setting: Literal options checked on construction, one
BlockConfig reaching every attention block, the task type only in TaskConfig (old config.json
files still load), target scaling only in TargetScaler, and the model composed from parts."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from molprop.data.scaling import TargetScaler
from molprop.errors import ConfigError
from molprop.models.config import ModelConfig, TaskConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import to_target_space
from molprop.nn.attention import MAB, BlockConfig
from molprop.nn.encoder import SetEncoder
from molprop.nn.heads import PredictionHead
from molprop.nn.readout import AttentionReadout

REPO = Path(__file__).resolve().parents[3]
SHIPPED = sorted((REPO / "pretrained").glob("*/config.json"))
TINY = dict(node_dim=5, edge_dim=3, n_tasks=1, hidden_dim=8, heads=2, num_seeds=2, head_hidden=8)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(token_kind="gnn"), "token kind"),
        (dict(mlp_kind="relu"), "MLP kind"),
        (dict(layers="MSX"), "layer pattern"),
        (dict(hidden_dim=10, heads=4), "divisible"),
        (dict(dropout=1.5), "dropout"),
    ],
)
def test_model_config_options_are_checked(bad: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ModelConfig(**{**TINY, **bad})


def test_task_config_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="task type"):
        TaskConfig(("y",), "multiclass")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="scaler"):
        TaskConfig(("y",), scaler_mean=(0.0,), scaler_std=())


def test_task_type_has_one_home() -> None:
    assert "task_type" not in {f.name for f in fields(ModelConfig)}
    assert "task_type" in {f.name for f in fields(TaskConfig)}
    assert "task_type" not in ModelConfig(**TINY).to_dict()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name)
def test_shipped_config_json_loads_and_matches_the_weights(path: Path) -> None:
    """Every shipped config.json loads; all are written in the current format (no shipped
    model carries the legacy ``model.task_type`` copy: the legacy reading is checked below);
    the model it describes has exactly the shipped state-dict keys and shapes (loaded
    strictly)."""
    raw = json.loads(path.read_text())
    assert "task_type" not in raw["model"], "a shipped config in the legacy format"
    model_cfg = ModelConfig.from_dict(raw["model"])
    task = TaskConfig.from_dict(raw["task"])
    assert task.task_type == raw["task"]["task_type"]
    assert model_cfg.to_dict() == raw["model"]
    assert ModelConfig.from_dict(model_cfg.to_dict()) == model_cfg  # rewritten: same config
    # trained with the CLI's defaults (make pretrained)
    assert TrainConfig.from_dict(raw["train"]).weight_decay_on == "matrices"
    state = load_file(str(path.parent / "members" / "0" / "model.safetensors"))
    model = MolPropModel.from_config(model_cfg)
    own = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert own == {k: tuple(v.shape) for k, v in state.items()}
    model.load_state_dict(state, strict=True)


def test_legacy_model_task_type_is_still_checked() -> None:
    with pytest.raises(ConfigError, match="model.task_type"):
        ModelConfig.from_dict({**TINY, "task_type": "ranking"})
    with pytest.raises(ConfigError, match="unknown ModelConfig keys"):
        ModelConfig.from_dict({**TINY, "task": "regression"})


@pytest.mark.parametrize("pre_ln, mlp_kind", [(True, "standard"), (False, "swiglu")])
def test_every_attention_block_gets_the_block_config(pre_ln: bool, mlp_kind: str) -> None:
    cfg = ModelConfig(
        **{**TINY, "heads": 4},
        layers="MSMP SS",
        pre_ln=pre_ln,
        mlp_kind=mlp_kind,
        mlp_mult=3,
        dropout=0.125,
        attn_dropout=0.25,
    )
    assert cfg.block == BlockConfig(4, 3, mlp_kind, pre_ln, 0.125, 0.25)
    model = MolPropModel.from_config(cfg)
    blocks = [m for m in model.modules() if isinstance(m, MAB)]
    assert len(blocks) == 3 + 1 + 2  # encoder M S M, the PMA's MAB, 2 SABs over the seeds
    for mab in blocks:
        assert mab.attn.heads == 4 and mab.attn.dropout == 0.25
        assert mab.mlp.kind == mlp_kind and mab.dropout.p == 0.125
        assert mab.mlp.dropout.p == 0.125 and mab.pre_ln is pre_ln
        assert isinstance(mab.ln_kv, torch.nn.LayerNorm) is pre_ln
        width = (2 if mlp_kind == "swiglu" else 1) * 3 * cfg.hidden_dim
        assert mab.mlp.gate.out_features == width
    assert model.head.net[2].p == 0.125


def test_model_is_composed_of_encoder_readout_head() -> None:
    cfg = ModelConfig(**TINY, n_extra=2, learnable_rbf=0)
    torch.manual_seed(3)
    built = MolPropModel.from_config(cfg)
    torch.manual_seed(3)
    block = cfg.block
    encoder = SetEncoder("esa", 5, 3, 8, "MSMSM", block)
    readout = AttentionReadout(8, 2, "S", block, size_path=True, size_linear=True)
    head = PredictionHead(readout.out_dim + 2, 8, 1)
    composed = MolPropModel(encoder, readout, head)
    assert composed.n_extra == built.n_extra == 2 and composed.n_tasks == 1
    assert built.config == cfg and composed.config is None
    a, b = built.state_dict(), composed.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="width"):
        MolPropModel(encoder, AttentionReadout(16, 2, "S", block), head)
    with pytest.raises(ValueError, match="head input"):
        MolPropModel(encoder, readout, PredictionHead(readout.out_dim - 1, 8, 1))


def test_target_scaling_has_one_implementation() -> None:
    """Training targets go through TaskConfig.scaler.transform, predictions back through the
    same scaler's inverse (bit for bit what to_target_space returns)."""
    rng = np.random.default_rng(0)
    y = rng.normal(3.0, 2.0, size=(50, 2))
    scaler = TargetScaler.fit(y)
    task = TaskConfig(("a", "b"), "regression", ("u", "v"), scaler.mean, scaler.std)
    assert task.scaler == scaler
    z = task.scaler.transform(y)
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(task.scaler.inverse(z), y, rtol=0, atol=1e-12)
    raw = rng.normal(size=(3, 50, 2))
    assert np.array_equal(to_target_space(raw, task), scaler.inverse(raw))
    expected = raw * np.asarray(scaler.std) + np.asarray(scaler.mean)  # the stored layout
    assert np.array_equal(to_target_space(raw, task), expected)
    probs = to_target_space(raw, replace(task, task_type="classification"))
    np.testing.assert_allclose(probs, 1.0 / (1.0 + np.exp(-raw)))
