"""Gaussian distance basis with a smooth cosine cutoff envelope (numpy).

For a distance d (Å), cutoff r_c and K centres mu_k = linspace(0, r_c, K):

    rbf_k(d) = exp(-(d - mu_k)^2 / (2 sigma^2)) * f_c(d),
    f_c(d)   = 0.5 * (cos(pi * d / r_c) + 1)   for d < r_c, else 0.

``sigma`` defaults to the grid spacing r_c / (K - 1) (neighbouring Gaussians cross near half
height). The envelope makes every feature go smoothly to zero at the cutoff, so an atom entering
or leaving the neighbour sphere changes the features continuously.
"""

from __future__ import annotations

import numpy as np


def cosine_cutoff(dist: np.ndarray, cutoff: float) -> np.ndarray:
    """Smooth envelope; dist: (...,) -> (...,), 1 at d = 0 and 0 for d >= cutoff."""
    dist = np.asarray(dist, dtype=np.float64)
    out = 0.5 * (np.cos(np.pi * dist / cutoff) + 1.0)
    return np.where(dist < cutoff, out, 0.0)


def default_width(cutoff: float, num_gaussians: int) -> float:
    """Grid spacing r_c / (K - 1), the default Gaussian width sigma (Å)."""
    return float(cutoff) / max(num_gaussians - 1, 1)


def gaussian_basis(
    dist: np.ndarray, cutoff: float, num_gaussians: int, width: float | None = None
) -> np.ndarray:
    """Expand distances in Gaussians times the cosine envelope.

    Shapes:
        dist: (E,) distances in Å -> (E, num_gaussians) float32.
    """
    dist = np.asarray(dist, dtype=np.float64).reshape(-1)
    sigma = default_width(cutoff, num_gaussians) if width is None else float(width)
    centres = np.linspace(0.0, cutoff, num_gaussians)
    rbf = np.exp(-((dist[:, None] - centres[None, :]) ** 2) / (2.0 * sigma**2))
    return (rbf * cosine_cutoff(dist, cutoff)[:, None]).astype(np.float32)
