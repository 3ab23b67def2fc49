"""Readout: PMA over tokens -> SABs over the seeds -> mean over seeds (+ the size path).

With padding masked everywhere, every attention output is a weighted *mean* of token values,
so attention pooling alone cannot tell a molecule's size (it cannot count). The size path
gives the head an explicit, batch-independent size signal:
``[log1p(n_tokens), log1p(n_nodes), W · (sum of token states / SUM_SCALE)]`` and, with
``size_linear``, ``[n_tokens, n_nodes] / SUM_SCALE`` (a linear head then extrapolates counts).
Disable it (``size_path=False``) for intensive targets of periodic systems, where a supercell
must give the same prediction as its cell.
"""

from __future__ import annotations

import torch
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.nn.attention import MAB, PMA, BlockConfig
from molprop.nn.edge_sets import TokenSet

#: Fixed divisor of the token-state sum (a typical drug-like molecule has 30-100 tokens).
SUM_SCALE = 32.0


class AttentionReadout(nn.Module):
    """PMA with ``num_seeds`` seeds over the token states -> one SAB per letter of ``decoder``
    over the seeds -> LayerNorm of the mean over seeds, then (``size_path``) the size signal of
    the module docstring appended.

    Shapes:
        h: (B, L_max, dim) token states; tokens: their TokenSet; batch: the GraphBatch
        (``n_nodes``) -> (B, out_dim), ``out_dim`` = dim, or 2 dim + 2 (+ 2 with ``size_linear``)
        with the size path
    """

    def __init__(
        self,
        dim: int,
        num_seeds: int,
        decoder: str,
        block: BlockConfig,
        size_path: bool = True,
        size_linear: bool = False,
    ):
        super().__init__()
        self.dim = dim
        self.pma = PMA(dim, num_seeds, block)
        self.sabs = nn.ModuleList(MAB(dim, block) for _ in decoder)
        self.norm = nn.LayerNorm(dim)
        self.size_path = size_path
        self.size_proj = nn.Linear(dim, dim) if size_path else None
        self.size_linear = size_path and size_linear
        self.out_dim = (2 * dim + 2 + 2 * self.size_linear) if size_path else dim

    def forward(self, h: torch.Tensor, tokens: TokenSet, batch: GraphBatch) -> torch.Tensor:
        return self.pool(h, tokens.valid, tokens.n_tokens, batch.n_nodes)

    def pool(
        self, h: torch.Tensor, valid: torch.Tensor, n_tokens: torch.Tensor, n_nodes: torch.Tensor
    ) -> torch.Tensor:
        """The readout on plain tensors (what :meth:`forward` and the ONNX export call).

        Shapes:
            h: (B, L_max, dim); valid: (B, L_max) real tokens; n_tokens, n_nodes: (B,)
            -> (B, out_dim)
        """
        seeds = self.pma(h, valid[:, None, :])  # (B, k, d)
        seed_mask = torch.ones(seeds.shape[0], 1, seeds.shape[1], dtype=torch.bool, device=h.device)
        for sab in self.sabs:
            seeds = sab(seeds, seeds, seed_mask)
        pooled = self.norm(seeds.mean(dim=1))  # (B, d)
        if self.size_proj is None:  # no size path
            return pooled
        total = (h * valid[..., None]).sum(dim=1) / SUM_SCALE  # (B, d)
        counts = torch.stack([n_tokens, n_nodes], dim=-1).to(h.dtype)
        parts = [pooled, self.size_proj(total), torch.log1p(counts)]
        if self.size_linear:
            parts.append(counts / SUM_SCALE)
        return torch.cat(parts, dim=-1)
