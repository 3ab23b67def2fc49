"""ESA / NSA masks against a brute-force definition on random batched graphs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from molprop.data import collate_graphs
from molprop.graph import MolGraph
from molprop.nn.edge_sets import edge_token_set, node_token_set


def random_graph(
    rng: np.random.Generator, n_nodes: int, n_edges: int, self_loops: bool
) -> MolGraph:
    src = rng.integers(0, n_nodes, n_edges)
    dst = rng.integers(0, n_nodes, n_edges)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    return MolGraph(
        x=rng.normal(size=(n_nodes, 3)).astype(np.float32),
        edge_index=np.stack([src, dst]).astype(np.int64),
        edge_attr=rng.normal(size=(len(src), 2)).astype(np.float32),
    )


def random_batch(seed: int):
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(rng.integers(2, 6)):
        n = int(rng.integers(1, 9))
        e = int(rng.integers(0, 12))
        graphs.append(random_graph(rng, n, e, self_loops=bool(rng.integers(0, 2))))
    graphs.append(random_graph(rng, 3, 0, False))  # edgeless graph: isolated nodes only
    return graphs


def brute_esa(graph: MolGraph) -> list[list[bool]]:
    """Tokens: the graph's edges, then a self-loop per isolated node (same order as molprop)."""
    edges = [tuple(e) for e in graph.edge_index.T.tolist()]
    deg = np.zeros(graph.n_nodes, int)
    for s, d in edges:
        deg[s] += 1
        deg[d] += 1
    edges += [(i, i) for i in range(graph.n_nodes) if deg[i] == 0]
    L = len(edges)
    m = [[bool(i != j and set(edges[i]) & set(edges[j])) for j in range(L)] for i in range(L)]
    for i in range(L):
        if not any(m[i]):
            m[i][i] = True
    return m


def brute_nsa(graph: MolGraph) -> list[list[bool]]:
    n = graph.n_nodes
    m = [[False] * n for _ in range(n)]
    for s, d in graph.edge_index.T.tolist():
        m[s][d] = True
    for i in range(n):
        if not any(m[i]):
            m[i][i] = True
    return m


@pytest.mark.parametrize("seed", range(8))
def test_esa_mask_matches_brute_force(seed):
    graphs = random_batch(seed)
    tokens = edge_token_set(collate_graphs(graphs))
    l_max = tokens.valid.shape[1]
    for g, graph in enumerate(graphs):
        expected = brute_esa(graph)
        L = len(expected)
        assert int(tokens.n_tokens[g]) == L
        got = tokens.structure_mask[g]
        assert got[:L, :L].tolist() == expected
        assert not got[:L, L:].any()  # no real token attends to padding
        assert tokens.valid[g].tolist() == [True] * L + [False] * (l_max - L)


@pytest.mark.parametrize("seed", range(8))
def test_nsa_mask_matches_brute_force(seed):
    graphs = random_batch(seed)
    tokens = node_token_set(collate_graphs(graphs))
    for g, graph in enumerate(graphs):
        expected = brute_nsa(graph)
        n = len(expected)
        got = tokens.structure_mask[g]
        assert got[:n, :n].tolist() == expected
        assert not got[:n, n:].any()


def test_every_row_has_an_allowed_key_so_softmax_is_finite():
    tokens = edge_token_set(collate_graphs(random_batch(3)))
    assert tokens.structure_mask.any(dim=-1).all()
    assert tokens.padding_mask.any(dim=-1).all()


def test_mask_memory_is_per_graph_not_all_pairs():
    graphs = [random_graph(np.random.default_rng(i), 10, 20, False) for i in range(16)]
    tokens = edge_token_set(collate_graphs(graphs))
    total = int(tokens.n_tokens.sum())
    assert tokens.structure_mask.numel() < total * total / 4
    assert tokens.structure_mask.shape == (
        16,
        int(tokens.n_tokens.max()),
        int(tokens.n_tokens.max()),
    )


def test_pad_places_tokens_in_their_graph_slots():
    graphs = random_batch(5)
    tokens = edge_token_set(collate_graphs(graphs))
    flat = torch.arange(tokens.features.shape[0], dtype=torch.float32)[:, None]
    padded = tokens.pad(flat)
    assert torch.equal(padded[tokens.valid][:, 0], flat[:, 0])
