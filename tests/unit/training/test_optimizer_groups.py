"""AdamW parameter groups (nanoGPT-style): weight decay on the weight matrices of Linear layers
only; biases, LayerNorm weights and biases, PMA seeds and the learnable distance basis are not
decayed; frozen parameters are not optimised; ``weight_decay_on="all"`` is the old single group."""

from __future__ import annotations

import pytest
import torch

from molprop.errors import ConfigError
from molprop.models.config import ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.training.lightning_module import LitMolProp, decay_split

CFG = ModelConfig(
    node_dim=5,
    edge_dim=3,
    n_tasks=2,
    hidden_dim=8,
    heads=2,
    layers="MSP S",
    num_seeds=2,
    head_hidden=8,
    n_extra=1,
    learnable_rbf=3,
)


def _groups(lit: LitMolProp) -> list[tuple[float, list[str]]]:
    """(weight decay, parameter names) of each group of the optimiser Lightning would use."""
    names = {id(p): n for n, p in lit.model.named_parameters()}
    opt = lit.configure_optimizers()["optimizer"]
    assert isinstance(opt, torch.optim.AdamW)
    return [(g["weight_decay"], [names[id(p)] for p in g["params"]]) for g in opt.param_groups]


# the weight matrices of this model, written out: every nn.Linear's ``weight``
MATRICES = [
    "encoder.embed.0.weight",
    "encoder.embed.2.weight",
    *[
        f"{block}.{layer}.weight"
        for block in ("encoder.blocks.0", "encoder.blocks.1", "readout.pma.mab", "readout.sabs.0")
        for layer in ("attn.q", "attn.kv", "attn.proj", "mlp.gate", "mlp.out")
    ],
    "readout.size_proj.weight",
    "head.net.0.weight",
    "head.net.3.weight",
]


def test_only_linear_weight_matrices_are_decayed() -> None:
    torch.manual_seed(0)
    model = MolPropModel.from_config(CFG)
    lit = LitMolProp(model, "regression", weight_decay=0.05)
    (decay_wd, decayed), (free_wd, free) = _groups(lit)
    assert (decay_wd, free_wd) == (0.05, 0.0)
    assert sorted(decayed) == sorted(MATRICES)
    everything = [n for n, _ in model.named_parameters()]
    assert sorted(free) == sorted(set(everything) - set(MATRICES))
    for name in (  # what nanoGPT's "dim >= 2" rule alone would get wrong or right
        "readout.pma.seeds",  # (1, k, d): 3-D, still not decayed
        "encoder.rbf.centres",
        "encoder.rbf.log_widths",
        "encoder.blocks.0.ln_q.weight",
        "readout.norm.weight",
        "readout.norm.bias",
        "head.net.3.bias",
    ):
        assert name in free
    assert len(free) + len(decayed) == len(everything)


def test_frozen_parameters_are_in_no_group() -> None:
    model = MolPropModel.from_config(CFG)
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    groups = _groups(LitMolProp(model, "regression"))
    optimised = [n for _, names in groups for n in names]
    assert optimised and not any(n.startswith("encoder.") for n in optimised)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert sorted(optimised) == sorted(trainable)
    assert decay_split(model)[0] == [m for m in MATRICES if not m.startswith("encoder.")]


def test_decay_all_is_the_old_single_group() -> None:
    model = MolPropModel.from_config(CFG)
    groups = _groups(LitMolProp(model, "regression", weight_decay=0.05, weight_decay_on="all"))
    assert groups == [(0.05, [n for n, _ in model.named_parameters()])]


def test_weight_decay_on_is_checked_and_legacy_train_configs_decay_all() -> None:
    with pytest.raises(ConfigError, match="weight_decay_on"):
        TrainConfig(weight_decay_on="none")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="weight_decay_on"):
        LitMolProp(MolPropModel.from_config(CFG), "regression", weight_decay_on="biases")  # type: ignore[arg-type]
    assert TrainConfig().weight_decay_on == "matrices"
    assert TrainConfig.from_dict({"epochs": 3}).weight_decay_on == "all"  # written before it
    cfg = TrainConfig(weight_decay_on="matrices")
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
