"""Query-chunked attention (large graphs) gives the same outputs and gradients as one call."""

from __future__ import annotations

import pytest
import torch

from molprop.data import collate_graphs
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.nn import attention

F = Graph2DFeaturizer()
SMILES = ["CCCCCCCCCCCCCCCCCCCC(=O)OCC(COC(=O)CCCCCCC)OC(=O)CCCCCCCCC", "c1ccccc1O", "CC(=O)N"]


def _run(kind: str, chunk: int, monkeypatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    monkeypatch.setattr(attention, "QUERY_CHUNK_ELEMENTS", chunk)
    torch.manual_seed(0)
    cfg = ModelConfig(
        node_dim=F.node_dim,
        edge_dim=F.edge_dim,
        n_tasks=1,
        token_kind=kind,
        hidden_dim=32,
        heads=4,
        num_seeds=4,
        layers="MSMP S",
        dropout=0.0,
    )
    model = MolPropModel.from_config(cfg).train()
    out = model(collate_graphs([F.from_smiles(s) for s in SMILES]))
    out.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.detach(), grads


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_chunked_queries_equal_one_call(kind, monkeypatch) -> None:
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(
        attention.F,
        "scaled_dot_product_attention",
        lambda *a, **k: calls.append(a[0].shape[2]) or sdpa(*a, **k),
    )
    whole, g_whole = _run(kind, 1 << 30, monkeypatch)
    n_whole = len(calls)
    chunked, g_chunked = _run(kind, 700, monkeypatch)  # a few query rows per call
    assert len(calls) - n_whole > 3 * n_whole  # really chunked
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    assert g_whole.keys() == g_chunked.keys()
    for name in g_whole:
        torch.testing.assert_close(g_chunked[name], g_whole[name], rtol=1e-4, atol=1e-6)
