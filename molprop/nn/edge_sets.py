"""Ragged graphs -> padded token sets and attention masks. The only padding code in molprop.

ESA: one token per directed edge; token i may attend to token j (i != j) iff the two edges
share an endpoint (any of src/dst x src/dst). Isolated atoms (no edges: ``C``, each ion of
``[Na+].[Cl-]``) get one *self-loop token* each (src = dst = the atom, zero edge features and
a self-loop flag of 1), so no atom is invisible and edgeless molecules give finite output.

ESA, ``scheme="undirected"``: one token per bond ({u, v}, kept once: the direction u < v of
the two stored directions) with symmetric features ``[x_u + x_v | x_u * x_v | edge_attr | flag]``
(the same width as the directed ``[x_src | x_dst | ...]``) and the same "share an atom" mask:
half the tokens, a quarter of the attention entries. Needs both directions of every edge with
equal attributes (molecular 2D and 3D graphs); periodic graphs are refused.

NSA: one token per node; node i may attend to node j iff (i, j) is an edge.

Both: padded slots are never attended to (key mask). A row that would be fully blocked
(an isolated token, a padded slot) may attend to itself, so every softmax is finite.

Periodic graphs (``edge_vec_shift`` set): a token of a cell stands for every lattice translate of
itself, and in a small cell one key token can be several *different* neighbours of a query in the
infinite crystal (atom i sees two images of atom j within the cutoff; an edge touches two images
of another edge). A boolean mask would count those once, a supercell (where the images are
distinct atoms) several times, so a 2x2x1 supercell would not predict 4x its cell. The mask
therefore carries ``multiplicity``: how many distinct infinite-crystal instances of key j are
neighbours of query i (NSA: the number of edges i -> j; ESA: the distinct lattice translates of
edge j that share an atom with edge i, edge i itself excluded - so an edge to an atom's own
image attends to its other translates). M layers add ``log(multiplicity)`` to the logits, which
makes the softmax over cell tokens equal the softmax over the crystal's neighbours: every cell
choice (cell, supercell, any size) gives the same token states. ``multiplicity`` is None when
every allowed pair counts once (molecules, cells larger than twice the cutoff).

Masks are built per graph as a (B, L_max, L_max) tensor: cost grows with B * L_max^2
(~ sum over graphs of L_g^2 with size-bucketed batches), never with (sum L_g)^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch

from molprop.data.batch import GraphBatch

#: ``esa``: one token per directed edge; ``nsa``: one token per node.
TokenKind = Literal["esa", "nsa"]
TOKEN_KINDS: tuple[str, ...] = get_args(TokenKind)
#: ESA edge tokens: ``directed`` (one per direction, the default) or ``undirected`` (one per bond).
TokenScheme = Literal["directed", "undirected"]
TOKEN_SCHEMES: tuple[str, ...] = get_args(TokenScheme)


@dataclass
class TokenSet:
    """Flat token inputs plus where each token sits in the padded (B, L_max) layout.

    Shapes:
        features: (L_total, F) token inputs, grouped by graph.
        graph: (L_total,) graph of each token; position: (L_total,) slot within its graph.
        valid: (B, L_max) True for real tokens.
        structure_mask: (B, L_max, L_max) True where query i may attend key j (M layers).
        n_tokens: (B,) tokens per graph.
        multiplicity: (B, L_max, L_max) int16 count of key instances per allowed pair
            (periodic graphs, see module docstring), or None when every count is 1.
    """

    features: torch.Tensor
    graph: torch.Tensor
    position: torch.Tensor
    valid: torch.Tensor
    structure_mask: torch.Tensor
    n_tokens: torch.Tensor
    multiplicity: torch.Tensor | None = None

    def structure_bias(self) -> torch.Tensor:
        """(B, L_max, L_max) float M-layer mask: log(multiplicity) where allowed, -inf elsewhere."""
        bias = torch.zeros(
            self.structure_mask.shape,
            dtype=torch.get_default_dtype(),
            device=self.structure_mask.device,
        )
        if self.multiplicity is not None:  # log only where it is not 0 (most counts are 1)
            repeated = self.multiplicity > 1
            bias[repeated] = self.multiplicity[repeated].to(bias.dtype).log()
        return bias.masked_fill_(~self.structure_mask, float("-inf"))

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


def _counted(count: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Integer counts (B, L, L) -> (finalised boolean mask, int16 multiplicity or None)."""
    mask = _finalise(count > 0, valid)
    if not bool(((count > 1) & mask).any()):
        return mask, None
    return mask, torch.where(mask, count.clamp(min=1), 0).to(torch.int16)


def _image_ids(shift: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per edge: an int64 id of its image shift S, the id of -S (equal ids = equal lattice
    vectors) and whether S = 0. Shifts are lattice vectors (>= ~1 Å apart): on a 1e-3 Å grid,
    21 bits per axis pack them into one integer (|S| < 1,000 Å; longer: ids of unique rows)."""
    key = torch.round(shift.double() * 1e3).long()
    zero = ~key.any(-1)
    if key.numel() and int(key.abs().max()) >= 1 << 20:
        ids = torch.unique(torch.cat([key, -key]), dim=0, return_inverse=True)[1]
        return ids[: len(key)], ids[len(key) :], zero
    scale = torch.tensor([1 << 42, 1 << 21, 1], dtype=torch.long, device=shift.device)
    return ((key + (1 << 20)) * scale).sum(-1), ((-key + (1 << 20)) * scale).sum(-1), zero


def _esa_image_count(src, dst, shift, graph, position, n_graphs, l_max) -> torch.Tensor:
    """(B, L, L) int16: how many distinct lattice translates of key edge k (``src -> dst``,
    image T) share an atom with query edge q (image S) in the infinite crystal, q itself excluded.

    Translate U of k shares an atom with q when src_k = src_q (U = 0), dst_k = src_q (U = -T),
    src_k = dst_q (U = S) or dst_k = dst_q (U = S - T); equal U are counted once. Only pairs
    that share an atom in the cell are visited (found through each atom's incident edges): cost
    ~ sum over atoms of their incident edges squared, not L^2 per graph."""
    n_tok = src.numel()
    tok = torch.arange(n_tok, device=src.device).repeat(2)
    atom = torch.cat([src, dst])
    role = torch.arange(2, device=src.device).repeat_interleave(n_tok)  # 0: src, 1: dst
    order = torch.argsort(atom, stable=True)
    atom, tok, role = atom[order], tok[order], role[order]
    size = torch.bincount(atom)  # incident edge ends per atom
    rep = size[atom]
    # every ordered pair (first, second) of edge ends at the same atom
    first = torch.repeat_interleave(torch.arange(atom.numel(), device=src.device), rep)
    within = torch.arange(first.numel(), device=src.device) - (torch.cumsum(rep, 0) - rep)[first]
    second = (torch.cumsum(size, 0) - size)[atom[first]] + within
    q, k = tok[first], tok[second]
    # which of the four (q end, k end) coincidences hold, as bits a1..a4 per (q, k)
    pair, inverse = torch.unique(q * n_tok + k, return_inverse=True)
    bits = torch.zeros(pair.numel(), dtype=torch.long, device=src.device)
    bits.index_add_(0, inverse, 1 << (2 * role[first] + role[second]))
    q, k = pair // n_tok, pair % n_tok
    a1, a2, a3, a4 = ((bits >> i) & 1 == 1 for i in range(4))  # ss, s_q=d_k, d_q=s_k, dd
    sid, nid, zero = _image_ids(shift)
    s0, t0 = zero[q], zero[k]
    count = a1.to(torch.int16)
    count += a2 & ~(a1 & t0)
    count += a3 & ~((a1 & s0) | (a2 & (sid[q] == nid[k])))
    count += a4 & ~((a1 & (sid[q] == sid[k])) | (a2 & s0) | (a3 & t0))
    count -= (q == k).to(torch.int16)  # the query edge itself (U = 0 of k = q)
    out = torch.zeros(n_graphs, l_max, l_max, dtype=torch.int16, device=src.device)
    out[graph[q], position[q], position[k]] = count
    return out


def _one_per_bond(batch: GraphBatch):
    """(src, dst, edge_attr, edge_graph) of the edges with src < dst: one per bond."""
    if batch.edge_vec_shift is not None:
        raise ValueError("undirected bond tokens are not defined for periodic graphs")
    src, dst = batch.edge_index
    keep = src < dst
    if 2 * int(keep.sum()) != src.numel():
        raise ValueError(
            "undirected bond tokens need every edge stored in both directions "
            f"({int(keep.sum())} of {src.numel()} edges have src < dst)"
        )
    return src[keep], dst[keep], batch.edge_attr[keep], batch.edge_graph[keep]


def edge_token_set(batch: GraphBatch, scheme: TokenScheme = "directed") -> TokenSet:
    """ESA tokens ``[x_src | x_dst | edge_attr | self_loop_flag]`` (``directed``) or
    ``[x_u + x_v | x_u * x_v | edge_attr | self_loop_flag]`` (``undirected``, one per bond) and
    their masks."""
    device = batch.x.device
    n_graphs = batch.num_graphs
    if scheme == "undirected":
        src, dst, edge_attr, graph = _one_per_bond(batch)
    elif scheme == "directed":
        src, dst = batch.edge_index
        edge_attr = batch.edge_attr
        graph = batch.edge_graph
    else:
        raise ValueError(f"unknown token scheme {scheme!r} {TOKEN_SCHEMES}")
    # isolated atoms -> self-loop tokens
    degree = torch.bincount(torch.cat([src, dst]), minlength=batch.x.shape[0])
    lonely = torch.nonzero(degree == 0).flatten()
    flag = torch.zeros(src.numel(), 1, device=device, dtype=edge_attr.dtype)
    shift = batch.edge_vec_shift
    if lonely.numel() > 0:
        src = torch.cat([src, lonely])
        dst = torch.cat([dst, lonely])
        edge_attr = torch.cat([edge_attr, edge_attr.new_zeros(lonely.numel(), edge_attr.shape[1])])
        flag = torch.cat([flag, torch.ones(lonely.numel(), 1, device=device, dtype=flag.dtype)])
        graph = torch.cat([graph, batch.node_graph[lonely]])
        order = torch.argsort(graph, stable=True)
        src, dst, edge_attr, flag, graph = (
            src[order],
            dst[order],
            edge_attr[order],
            flag[order],
            graph[order],
        )
        if shift is not None:
            shift = torch.cat([shift, shift.new_zeros(lonely.numel(), 3)])[order]
    counts, position, valid = _layout(graph, n_graphs)
    x_src, x_dst = batch.x[src], batch.x[dst]
    if scheme == "undirected":
        x_src, x_dst = x_src + x_dst, x_src * x_dst
    features = torch.cat([x_src, x_dst, edge_attr, flag], dim=-1)
    l_max = valid.shape[1]
    if shift is not None:  # periodic: count image multiplicities
        count = _esa_image_count(src, dst, shift, graph, position, n_graphs, l_max)
        mask, multiplicity = _counted(count, valid)
        return TokenSet(features, graph, position, valid, mask, counts, multiplicity)
    # endpoints in the padded layout (-1 / -2 in padding never match a real node id)
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
    if batch.edge_vec_shift is not None:  # periodic: count edges i -> j (images of j)
        count = torch.zeros(mask.shape, dtype=torch.int32, device=mask.device)
        count.index_put_(
            (graph[src], position[src], position[dst]),
            torch.ones_like(src, dtype=torch.int32),
            accumulate=True,
        )
        mask, multiplicity = _counted(count, valid)
        return TokenSet(batch.x, graph, position, valid, mask, counts, multiplicity)
    if src.numel() > 0:
        mask[graph[src], position[src], position[dst]] = True
    mask = _finalise(mask, valid)
    return TokenSet(batch.x, graph, position, valid, mask, counts)


def token_set(batch: GraphBatch, kind: TokenKind, scheme: TokenScheme = "directed") -> TokenSet:
    """``kind`` is ``"esa"`` (edge tokens, ``scheme`` directed / undirected) or ``"nsa"``
    (node tokens)."""
    if kind == "esa":
        return edge_token_set(batch, scheme)
    if kind == "nsa":
        return node_token_set(batch)
    raise ValueError(f"unknown token kind {kind!r}")


def token_input_dim(kind: TokenKind, node_dim: int, edge_dim: int) -> int:
    """Width of ``TokenSet.features`` for a featuriser with these dimensions."""
    return 2 * node_dim + edge_dim + 1 if kind == "esa" else node_dim
