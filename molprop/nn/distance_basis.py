"""Learnable Gaussian distance basis (optional, 3D models).

    phi_k(d) = exp(-(d - mu_k)^2 / (2 sigma_k^2)) * f_cut(d),
    f_cut(d) = 0.5 (cos(pi d / r_c) + 1) for d < r_c, else 0

``mu_k`` start on a uniform grid 0..r_c and ``sigma_k`` at the grid spacing; both are trained.
The featuriser's fixed basis stays in the edge features; these K learnable channels are
appended to them. Distances come from ``pos`` (and ``edge_vec_shift`` for periodic edges).

Shapes: ``edge_lengths(batch)`` -> (E,); ``forward(d)`` (E,) -> (E, K).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from molprop.data.batch import GraphBatch


def edge_lengths(batch: GraphBatch) -> torch.Tensor:
    """|pos[dst] + shift - pos[src]| for every edge (minimum-image shift for periodic edges)."""
    if batch.pos is None:
        raise ValueError("a learnable distance basis needs 3D coordinates (use --featurizer 3d)")
    src, dst = batch.edge_index
    vec = batch.pos[dst] - batch.pos[src]
    if batch.edge_vec_shift is not None:
        vec = vec + batch.edge_vec_shift
    return vec.norm(dim=-1)


class LearnableGaussianBasis(nn.Module):
    """K = ``num_gaussians`` Gaussians of an edge length with trained centres and widths, times
    the cosine cutoff envelope at ``cutoff`` Å (see module docstring).

    Shapes:
        d: (E,) edge lengths in Å -> (E, K)
    """

    def __init__(self, num_gaussians: int, cutoff: float):
        super().__init__()
        self.cutoff = float(cutoff)
        spacing = self.cutoff / max(num_gaussians - 1, 1)
        self.centres = nn.Parameter(torch.linspace(0.0, self.cutoff, num_gaussians))
        self.log_widths = nn.Parameter(torch.full((num_gaussians,), math.log(spacing)))

    def forward(self, d: torch.Tensor) -> torch.Tensor:
        d = d[:, None]  # (E, 1)
        width = self.log_widths.exp()[None, :]  # (1, K)
        gauss = torch.exp(-0.5 * ((d - self.centres[None, :]) / width) ** 2)  # (E, K)
        envelope = 0.5 * (torch.cos(math.pi * d / self.cutoff) + 1.0) * (d < self.cutoff)
        return gauss * envelope


#: Atomic numbers 0..MAX_Z get their own element-pair parameters (larger ones share slot MAX_Z).
MAX_Z = 100


class PairGaussianBasis(nn.Module):
    """Element-pair-conditioned learnable Gaussians (the paper's 3D input, after Graphormer-3D /
    Transformer-M): each unordered element pair (Z_i, Z_j) has a learned scale a and offset b,
    and K Gaussians with trained centres and widths are taken of a * d + b, times the cosine
    envelope of d at ``cutoff`` (so features still vanish smoothly at the cutoff). delta and b
    start at 0 (weight decay pulls them back there, not a towards 0), so an untrained basis equals :class:`LearnableGaussianBasis`.

    Shapes:
        d: (E,) edge lengths in Å; z_src, z_dst: (E,) atomic numbers -> (E, K)
    """

    def __init__(self, num_gaussians: int, cutoff: float):
        super().__init__()
        self.basis = LearnableGaussianBasis(num_gaussians, cutoff)
        n_pairs = (MAX_Z + 1) * (MAX_Z + 1)
        self.scale_delta = nn.Embedding(n_pairs, 1)
        self.offset = nn.Embedding(n_pairs, 1)
        nn.init.zeros_(self.scale_delta.weight)
        nn.init.zeros_(self.offset.weight)

    def forward(self, d: torch.Tensor, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        a = z_src.clamp(0, MAX_Z)
        b = z_dst.clamp(0, MAX_Z)
        pair = torch.minimum(a, b) * (MAX_Z + 1) + torch.maximum(a, b)  # symmetric in i, j
        scale = 1.0 + self.scale_delta(pair).squeeze(-1)
        scaled = scale * d + self.offset(pair).squeeze(-1)
        basis = self.basis
        width = basis.log_widths.exp()[None, :]
        gauss = torch.exp(-0.5 * ((scaled[:, None] - basis.centres[None, :]) / width) ** 2)
        envelope = 0.5 * (torch.cos(math.pi * d / basis.cutoff) + 1.0) * (d < basis.cutoff)
        return gauss * envelope[:, None]
