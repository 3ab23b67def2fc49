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
