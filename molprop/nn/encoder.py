"""Set encoder: token embedding + a stack of M (masked) and S (self) attention blocks.

``M`` blocks use the graph structure mask, ``S`` blocks only the padding mask; the encoder
output gets a skip connection from its input (the embedded tokens).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.nn.attention import MAB, BlockConfig
from molprop.nn.distance_basis import LearnableGaussianBasis, PairGaussianBasis, edge_lengths
from molprop.nn.edge_sets import TokenKind, TokenScheme, TokenSet, token_input_dim, token_set


class SetEncoder(nn.Module):
    """Token set of a batch (``token_kind`` esa: edge tokens, nsa: node tokens; see
    ``nn.edge_sets``) -> ``embed`` (Linear-GELU-Linear to ``dim``) -> one :class:`MAB` per letter
    of ``pattern`` (``M``: structure mask, ``S``: padding mask) -> + the embedded tokens.
    ``learnable_rbf`` K > 0 adds K learnable Gaussians of the 3D edge length
    (:class:`LearnableGaussianBasis`) to each edge's (ESA) or, summed, each atom's (NSA) features.
    ``token_scheme`` (ESA): ``directed`` edge tokens or ``undirected`` bond tokens.
    ``pair_rbf`` P > 0 adds P element-pair-conditioned learnable Gaussians
    (:class:`PairGaussianBasis`, needs ``batch.z``) to each edge's features (ESA) and, summed over
    each atom's edges, to each atom's features (ESA and NSA: the paper's per-atom sums).

    Shapes:
        batch: GraphBatch of B graphs -> h: (B, L_max, dim) token states (padded slots are
        meaningless) and the TokenSet (L_max = most tokens in a graph of the batch)
    """

    def __init__(
        self,
        token_kind: TokenKind,
        node_dim: int,
        edge_dim: int,
        dim: int,
        pattern: str,
        block: BlockConfig,
        learnable_rbf: int = 0,
        rbf_cutoff: float = 5.0,
        token_scheme: TokenScheme = "directed",
        pair_rbf: int = 0,
    ):
        super().__init__()
        self.token_kind = token_kind
        self.token_scheme = token_scheme
        self.pattern = pattern
        self.dim = dim
        self.rbf = LearnableGaussianBasis(learnable_rbf, rbf_cutoff) if learnable_rbf else None
        self.pair_rbf = PairGaussianBasis(pair_rbf, rbf_cutoff) if pair_rbf else None
        k, p = learnable_rbf, pair_rbf
        # ESA: learned channels join each edge's features; NSA: summed over each atom's edges.
        # Pair Gaussians: on each edge (ESA) and summed per atom (both).
        in_dim = token_input_dim(
            token_kind,
            node_dim + (k if token_kind == "nsa" else 0) + p,
            edge_dim + (k + p if token_kind == "esa" else 0),
        )
        self.embed = nn.Sequential(nn.Linear(in_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList(MAB(dim, block) for _ in pattern)

    def forward(self, batch: GraphBatch) -> tuple[torch.Tensor, TokenSet]:
        """-> (B, L_max, dim) token states (padded slots are meaningless) and the TokenSet."""
        if self.rbf is not None:
            learned = self.rbf(edge_lengths(batch)).to(batch.edge_attr.dtype)  # (E, K)
            if self.token_kind == "esa":
                batch = replace(batch, edge_attr=torch.cat([batch.edge_attr, learned], dim=-1))
            else:
                per_atom = learned.new_zeros(batch.x.shape[0], learned.shape[1])
                per_atom.index_add_(0, batch.edge_index[0], learned)  # (N, K)
                batch = replace(batch, x=torch.cat([batch.x, per_atom], dim=-1))
        if self.pair_rbf is not None:
            if batch.z is None:
                raise ValueError("element-pair Gaussians need atomic numbers (--featurizer 3d)")
            src, dst = batch.edge_index
            pair = self.pair_rbf(edge_lengths(batch), batch.z[src], batch.z[dst])
            pair = pair.to(batch.edge_attr.dtype)  # (E, P)
            per_atom = pair.new_zeros(batch.x.shape[0], pair.shape[1])
            per_atom.index_add_(0, src, pair)  # (N, P)
            x = torch.cat([batch.x, per_atom], dim=-1)
            edge_attr = batch.edge_attr
            if self.token_kind == "esa":
                edge_attr = torch.cat([edge_attr, pair], dim=-1)
            batch = replace(batch, x=x, edge_attr=edge_attr)
        tokens = token_set(batch, self.token_kind, self.token_scheme)
        h0 = tokens.pad(self.embed(tokens.features))  # (B, L_max, dim)
        structure = tokens.structure_mask
        if tokens.multiplicity is not None:  # periodic images: log-count bias (edge_sets)
            structure = tokens.structure_bias()
        elif torch.is_grad_enabled() and "M" in self.pattern:
            structure = additive_mask(structure)
        return self.attend(h0, structure, tokens.padding_mask), tokens

    def attend(
        self, h0: torch.Tensor, structure: torch.Tensor, key_mask: torch.Tensor
    ) -> torch.Tensor:
        """Embedded padded tokens -> the M/S blocks -> + ``h0`` (the encoder's skip).

        Shapes:
            h0: (B, L_max, dim); structure: (B, L_max, L_max) bool or float bias (M blocks);
            key_mask: (B, 1, L_max) real tokens (S blocks) -> (B, L_max, dim)
        """
        h = h0
        for kind, block in zip(self.pattern, self.blocks):
            h = block(h, h, structure if kind == "M" else key_mask)
        return h + h0


def additive_mask(mask: torch.Tensor) -> torch.Tensor:
    """Boolean mask (True = may attend) -> float bias (0 / -inf) for ``scaled_dot_product_attention``.

    Used when training: given a boolean mask, SDPA makes a float copy on every call and autograd
    keeps each copy for the backward pass (one (B, L, L) float32 tensor per M block). Converting
    once per forward lets all M blocks share one tensor. Inference keeps the boolean mask, whose
    float copies are transient (and query-chunked for large graphs, see ``nn/attention.py``)."""
    bias = torch.zeros(mask.shape, dtype=torch.get_default_dtype(), device=mask.device)
    return bias.masked_fill_(~mask, float("-inf"))
