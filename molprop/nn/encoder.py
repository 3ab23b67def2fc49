"""Set encoder: token embedding + a stack of M (masked) and S (self) attention blocks.

``M`` blocks use the graph structure mask, ``S`` blocks only the padding mask; the encoder
output gets a skip connection from its input (the embedded tokens).
"""

from __future__ import annotations

import torch
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.nn.attention import MAB
from molprop.nn.edge_sets import TokenSet, token_input_dim, token_set


class SetEncoder(nn.Module):
    def __init__(
        self,
        token_kind: str,
        node_dim: int,
        edge_dim: int,
        dim: int,
        pattern: str,
        **mab_kwargs,
    ):
        super().__init__()
        self.token_kind = token_kind
        self.pattern = pattern
        in_dim = token_input_dim(token_kind, node_dim, edge_dim)
        self.embed = nn.Sequential(nn.Linear(in_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList(MAB(dim, **mab_kwargs) for _ in pattern)

    def forward(self, batch: GraphBatch) -> tuple[torch.Tensor, TokenSet]:
        """-> (B, L_max, dim) token states (padded slots are meaningless) and the TokenSet."""
        tokens = token_set(batch, self.token_kind)
        h0 = tokens.pad(self.embed(tokens.features))  # (B, L_max, dim)
        h = h0
        for kind, block in zip(self.pattern, self.blocks):
            mask = tokens.structure_mask if kind == "M" else tokens.padding_mask
            h = block(h, h, mask)
        return h + h0, tokens
