"""Ragged graphs -> padded token sets and attention masks. The only padding code in molprop.

ESA: one token per directed edge; token i may attend to token j (i != j) iff the two edges
share an endpoint (any of src/dst x src/dst). Isolated atoms (no edges: ``C``, each ion of
``[Na+].[Cl-]``) get one *self-loop token* each (src = dst = the atom, zero edge features and
a self-loop flag of 1), so no atom is invisible and edgeless molecules give finite output.

NSA: one token per node; node i may attend to node j iff (i, j) is an edge.

Both: padded slots are never attended to (key mask). A row that would be fully blocked
(an isolated token, a padded slot) may attend to itself, so every softmax is finite.

Masks are built per graph as a (B, L_max, L_max) tensor: cost grows with B * L_max^2
(~ sum over graphs of L_g^2 with size-bucketed batches), never with (sum L_g)^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from molprop.data.batch import GraphBatch


@dataclass
class TokenSet:
    """Flat token inputs plus where each token sits in the padded (B, L_max) layout.

    Shapes:
        features: (L_total, F) token inputs, grouped by graph.
        graph: (L_total,) graph of each token; position: (L_total,) slot within its graph.
        valid: (B, L_max) True for real tokens.
        structure_mask: (B, L_max, L_max) True where query i may attend key j (M layers).
        n_tokens: (B,) tokens per graph.
    """

    features: torch.Tensor
    graph: torch.Tensor
    position: torch.Tensor
    valid: torch.Tensor
    structure_mask: torch.Tensor
    n_tokens: torch.Tensor

    @property
    def padding_mask(self) -> torch.Tensor:
        """(B, 1, L_max) key mask for S layers and PMA: only real tokens are keys."""
        return self.valid[:, None, :]

    def pad(self, flat: torch.Tensor) -> torch.Tensor:
        """(L_total, d) -> (B, L_max, d), zeros in padded slots."""
        b, l_max = self.valid.shape
        out = flat.new_zeros(b, l_max, flat.shape[-1])
        out[self.graph, self.position] = flat
        return out


def _layout(graph: torch.Tensor, n_graphs: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counts per graph, slot of each (graph-sorted) token, and the (B, L_max) valid mask."""
    counts = torch.bincount(graph, minlength=n_graphs)
    starts = torch.cumsum(counts, 0) - counts
    position = torch.arange(graph.numel(), device=graph.device) - starts[graph]
    l_max = int(counts.max().item()) if n_graphs > 0 else 0
    valid = torch.arange(max(l_max, 1), device=graph.device)[None, :] < counts[:, None]
    return counts, position, valid


def _finalise(mask: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Block padded keys/queries; let fully blocked rows attend to themselves.

    Works in place on ``mask`` (no (B, L, L) temporaries: peak memory ~ 2 masks)."""
    mask &= valid[:, :, None]
    mask &= valid[:, None, :]
    blocked = ~mask.any(dim=-1)  # (B, L)
    mask.diagonal(dim1=1, dim2=2).logical_or_(blocked)
    return mask


def edge_token_set(batch: GraphBatch) -> TokenSet:
    """ESA tokens ``[x_src | x_dst | edge_attr | self_loop_flag]`` and their masks."""
    device = batch.x.device
    n_graphs = batch.num_graphs
    src, dst = batch.edge_index
    edge_attr = batch.edge_attr
    graph = batch.edge_graph
    # isolated atoms -> self-loop tokens
    degree = torch.bincount(torch.cat([src, dst]), minlength=batch.x.shape[0])
    lonely = torch.nonzero(degree == 0).flatten()
    flag = torch.zeros(src.numel(), 1, device=device, dtype=edge_attr.dtype)
    if lonely.numel() > 0:
        src = torch.cat([src, lonely])
        dst = torch.cat([dst, lonely])
        edge_attr = torch.cat([edge_attr, edge_attr.new_zeros(lonely.numel(), edge_attr.shape[1])])
        flag = torch.cat([flag, torch.ones(lonely.numel(), 1, device=device, dtype=flag.dtype)])
        graph = torch.cat([graph, batch.node_graph[lonely]])
        order = torch.argsort(graph, stable=True)
        src, dst, edge_attr, flag, graph = src[order], dst[order], edge_attr[order], flag[order], graph[order]
    counts, position, valid = _layout(graph, n_graphs)
    features = torch.cat([batch.x[src], batch.x[dst], edge_attr, flag], dim=-1)
    # endpoints in the padded layout (-1 / -2 in padding never match a real node id)
    l_max = valid.shape[1]
    s = torch.full((n_graphs, l_max), -1, dtype=torch.long, device=device)
    d = torch.full((n_graphs, l_max), -2, dtype=torch.long, device=device)
    s[graph, position] = src
    d[graph, position] = dst
    shared = s[:, :, None] == s[:, None, :]  # in-place ORs: one (B, L, L) temporary at a time
    shared |= s[:, :, None] == d[:, None, :]
    shared |= d[:, :, None] == s[:, None, :]
    shared |= d[:, :, None] == d[:, None, :]
    shared.diagonal(dim1=1, dim2=2).fill_(False)
    mask = _finalise(shared, valid)
    return TokenSet(features, graph, position, valid, mask, counts)


def node_token_set(batch: GraphBatch) -> TokenSet:
    """NSA tokens (node features) and the adjacency mask."""
    n_graphs = batch.num_graphs
    graph = batch.node_graph
    counts, position, valid = _layout(graph, n_graphs)
    l_max = valid.shape[1]
    mask = torch.zeros(n_graphs, l_max, l_max, dtype=torch.bool, device=batch.x.device)
    src, dst = batch.edge_index
    if src.numel() > 0:
        mask[graph[src], position[src], position[dst]] = True
    mask = _finalise(mask, valid)
    return TokenSet(batch.x, graph, position, valid, mask, counts)


def token_set(batch: GraphBatch, kind: str) -> TokenSet:
    """``kind`` is ``"esa"`` (edge tokens) or ``"nsa"`` (node tokens)."""
    if kind == "esa":
        return edge_token_set(batch)
    if kind == "nsa":
        return node_token_set(batch)
    raise ValueError(f"unknown token kind {kind!r}")


def token_input_dim(kind: str, node_dim: int, edge_dim: int) -> int:
    """Width of ``TokenSet.features`` for a featuriser with these dimensions."""
    return 2 * node_dim + edge_dim + 1 if kind == "esa" else node_dim
