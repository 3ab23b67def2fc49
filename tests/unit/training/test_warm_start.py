"""InitSource: a trained artifact as the start of a new task -- its encoder + readout weights,
a fresh head, its architecture and featuriser (disagreeing settings are errors)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from molprop.artifact.store import member_path
from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig
from molprop.training.fit import build_model
from molprop.training.warm_start import InitSource, model_conflicts


@pytest.fixture(scope="module")
def source() -> InitSource:
    return InitSource.open("solubility")


def test_member_loads_encoder_and_readout_with_a_fresh_head(source: InitSource) -> None:
    own = source.config.model
    config = source.model_config(3, {}, own.node_dim, own.edge_dim)
    assert config.n_tasks == 3 and config.hidden_dim == own.hidden_dim
    assert config.layers == own.layers and config.token_kind == own.token_kind
    n = source.config.n_members
    for m in (0, n):  # member n starts from the artifact's member 0 again
        model = source.member(config, m, seed=7 + m)
        state = load_file(str(member_path(source.directory, m % n)))
        loaded = {k: v for k, v in model.state_dict().items() if not k.startswith("head.")}
        assert loaded and all(k.startswith(("encoder.", "readout.")) for k in loaded)
        for key, value in loaded.items():
            assert torch.equal(value, state[key]), key
        head = {k: v for k, v in model.state_dict().items() if k.startswith("head.")}
        fresh = build_model(config, 7 + m).state_dict()  # a random start with the same seed
        for key, value in head.items():
            assert torch.equal(value, fresh[key]), key
        assert model.head.net[-1].out_features == 3  # the new task's outputs
        assert not torch.equal(head["head.net.0.weight"], state["head.net.0.weight"])


def test_model_settings_must_agree(source: InitSource) -> None:
    own = source.config.model
    assert model_conflicts(own, {"hidden_dim": own.hidden_dim, "layers": own.layers}) == []
    assert model_conflicts(own, {"hidden_dim": own.hidden_dim * 2, "heads": own.heads}) == [
        "hidden_dim"
    ]
    with pytest.raises(ConfigError, match="hidden_dim"):
        source.model_config(1, {"hidden_dim": own.hidden_dim * 2}, own.node_dim, own.edge_dim)
    with pytest.raises(ConfigError, match="features"):
        source.model_config(1, {}, own.node_dim + 1, own.edge_dim)


def test_featurizer_comes_from_the_artifact(source: InitSource) -> None:
    own = source.config.featurizer
    assert source.featurizer(FeaturizerConfig()) == own
    assert source.featurizer(own) == own
    with pytest.raises(ConfigError, match="featurizer 3d"):
        source.featurizer(FeaturizerConfig(kind="3d"))
