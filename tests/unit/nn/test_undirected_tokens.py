"""Undirected bond tokens (``token_scheme="undirected"``): one token per bond with symmetric
features, the "share an atom" mask, the invariances of directed tokens, old configs loading to
directed models, and the ONNX export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from molprop.cli.main import build_parser
from molprop.cli.options import model_overrides
from molprop.data import collate_graphs
from molprop.errors import ConfigError
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.models.onnx import OnnxMember, export_member
from molprop.nn.edge_sets import edge_token_set
from tests.unit.models.test_invariance import LARGE, SMALL, F, model, predict


def test_one_token_per_bond_with_symmetric_features():
    g = F.from_smiles("CCCO")  # bonds 0-1, 1-2, 2-3
    batch = collate_graphs([g])
    directed, undirected = edge_token_set(batch), edge_token_set(batch, "undirected")
    assert int(directed.n_tokens[0]) == 6 and int(undirected.n_tokens[0]) == 3
    x = torch.as_tensor(g.x, dtype=torch.float32)
    nd = x.shape[1]
    bonds = [(0, 1), (1, 2), (2, 3)]
    for k, (u, v) in enumerate(bonds):
        feats = undirected.features[k]
        torch.testing.assert_close(feats[:nd], x[u] + x[v])
        torch.testing.assert_close(feats[nd : 2 * nd], x[u] * x[v])
        assert feats[-1] == 0  # not a self-loop token
    assert undirected.features.shape[1] == directed.features.shape[1]  # same input width
    # share an atom: 01~12, 12~23, not 01~23, nobody with itself
    expected = torch.tensor([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=torch.bool)
    assert torch.equal(undirected.structure_mask[0], expected)


def test_isolated_atoms_get_self_loop_tokens():
    tokens = edge_token_set(collate_graphs([F.from_smiles("[Na+].[Cl-]")]), "undirected")
    assert int(tokens.n_tokens[0]) == 2 and tokens.features[:, -1].tolist() == [1.0, 1.0]


def test_batch_padding_and_atom_order_invariance():
    m = model("esa", layers="MSMP S", token_scheme="undirected")
    alone = predict(m, [SMALL])[0]
    np.testing.assert_allclose(predict(m, [SMALL, *LARGE])[0], alone, atol=1e-5)
    np.testing.assert_allclose(predict(m, [*LARGE, SMALL, "C"])[len(LARGE)], alone, atol=1e-5)
    np.testing.assert_allclose(predict(m, ["Oc1ccc(NC(C)=O)cc1"])[0], alone, atol=1e-5)
    out = predict(m, ["C", "[Na+].[Cl-]", "O=O", "[He]", "CCO"])
    assert np.isfinite(out).all()
    # the scheme matters: the same weights in a directed model predict something else
    directed_cfg = ModelConfig(**{**m.config.to_dict(), "token_scheme": "directed"})
    directed = MolPropModel.from_config(directed_cfg).eval()
    directed.load_state_dict(m.state_dict())
    assert np.abs(predict(directed, [SMALL])[0] - alone).max() > 1e-3


#: the "model" section of the shipped solubility config.json as written before the token scheme
#: existed (git show 8e4a1f8:pretrained/solubility/config.json)
OLD_MODEL_JSON = (
    '{"node_dim": 72, "edge_dim": 13, "n_tasks": 1, "task_type": "regression", '
    '"token_kind": "esa", "hidden_dim": 64, "heads": 4, "layers": "MSMSP S", "num_seeds": 8, '
    '"mlp_kind": "standard", "mlp_mult": 2, "pre_ln": true, "dropout": 0.1, '
    '"attn_dropout": 0.0, "size_path": true, "n_extra": 0, "head_hidden": 128, '
    '"learnable_rbf": 0, "rbf_cutoff": 5.0, "size_linear": true}'
)


def test_old_config_json_loads_to_the_same_directed_model():
    data = json.loads(OLD_MODEL_JSON)
    assert "token_scheme" not in data  # written before the field existed
    cfg = ModelConfig.from_dict(data)
    assert cfg.token_scheme == "directed"
    data.pop("task_type")  # a legacy key from_dict drops (see ModelConfig)
    assert cfg.to_dict() == data  # directed models write the same config.json as before
    assert ModelConfig.from_dict({**data, "token_scheme": "undirected"}).token_scheme == (
        "undirected"
    )


def test_bad_combinations_are_refused():
    with pytest.raises(ConfigError, match="ESA"):
        ModelConfig(F.node_dim, F.edge_dim, 1, token_kind="nsa", token_scheme="undirected")
    with pytest.raises(ConfigError, match="token scheme"):
        ModelConfig(F.node_dim, F.edge_dim, 1, token_scheme="sorted")
    batch = collate_graphs([F.from_smiles("CCO")])
    one_way = collate_graphs([F.from_smiles("CCO")])
    keep = one_way.edge_index[0] < one_way.edge_index[1]
    from dataclasses import replace

    one_way = replace(
        one_way,
        edge_index=one_way.edge_index[:, keep],
        edge_attr=one_way.edge_attr[keep],
        edge_graph=one_way.edge_graph[keep],
    )
    with pytest.raises(ValueError, match="both directions"):
        edge_token_set(one_way, "undirected")
    assert edge_token_set(batch, "undirected").features.shape[0] == 2


def test_flag_reaches_the_model_config():
    base = ["train", "--data", "x.csv", "--target-columns", "y", "--out", "o"]
    args = build_parser().parse_args(base + ["--token-scheme", "undirected"])
    assert model_overrides(args)["token_scheme"] == "undirected"
    assert model_overrides(build_parser().parse_args(base))["token_scheme"] == "directed"


def test_onnx_export_of_an_undirected_model_equals_torch(tmp_path):
    m = model("esa", layers="MSMP S", token_scheme="undirected")
    graphs = [F.from_smiles(s) for s in [SMALL, *LARGE, "[Na+].[Cl-]", "CCO"]]
    batch = collate_graphs(graphs)
    export_member(m, collate_graphs(graphs[:2]), tmp_path / "m.onnx")
    with torch.no_grad():
        expected = m(batch).numpy()
    got = OnnxMember(tmp_path / "m.onnx", m, threads=1)(batch).numpy()
    assert np.abs(got - expected).max() < 1e-4
