"""Reference ESA mask built the way the paper's Algorithm 1 does: all pairs of edges in the batch.

All directed edges of the batch (global node ids) are compared with each other, giving a
(sum_g L_g) x (sum_g L_g) boolean matrix (memory and time grow with (sum of edges)^2); edges of
different graphs never share a node, so the matrix is block diagonal, and each graph's
(L_g, L_g) block is then copied into the padded (B, L_max, L_max) layout. Used only to
benchmark against, and to check that ``molprop.nn.edge_sets`` builds the same mask.

Token order and rules are molprop's: a self-loop token for each isolated atom, tokens grouped
by graph (stable), i != j, padded slots blocked, a fully blocked row may attend to itself.
"""

from __future__ import annotations

import torch

from molprop.data.batch import GraphBatch


def token_endpoints(batch: GraphBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, dst, graph) of every ESA token, grouped by graph; each (L_total,)."""
    src, dst = batch.edge_index
    graph = batch.edge_graph
    degree = torch.bincount(torch.cat([src, dst]), minlength=batch.x.shape[0])
    lonely = torch.nonzero(degree == 0).flatten()
    src, dst = torch.cat([src, lonely]), torch.cat([dst, lonely])
    graph = torch.cat([graph, batch.node_graph[lonely]])
    order = torch.argsort(graph, stable=True)
    return src[order], dst[order], graph[order]


def all_pairs_mask(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Algorithm 1: (L_total, L_total) True where edges i != j share an endpoint."""
    shared = (
        (src[:, None] == src[None, :])
        | (src[:, None] == dst[None, :])
        | (dst[:, None] == src[None, :])
        | (dst[:, None] == dst[None, :])
    )
    shared.fill_diagonal_(False)
    return shared


def reference_esa_mask(batch: GraphBatch) -> torch.Tensor:
    """-> (B, L_max, L_max) ESA structure mask via the all-pairs matrix."""
    src, dst, graph = token_endpoints(batch)
    full = all_pairs_mask(src, dst)  # (L_total, L_total)
    counts = torch.bincount(graph, minlength=batch.num_graphs)
    l_max = max(int(counts.max()), 1)
    out = torch.zeros(batch.num_graphs, l_max, l_max, dtype=torch.bool)
    start = 0
    for g, n in enumerate(counts.tolist()):
        out[g, :n, :n] = full[start : start + n, start : start + n]
        blocked = ~out[g, :n, :n].any(dim=-1)
        out[g, torch.arange(n)[blocked], torch.arange(n)[blocked]] = True
        out[g, n:, n:] = torch.eye(l_max - n, dtype=torch.bool)  # padded rows: self only
        start += n
    return out
