"""Target standardisation, fitted on the training split only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TargetScaler:
    """Per-target ``(y - mean) / std``; identity for classification targets."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def fit(cls, targets: np.ndarray) -> TargetScaler:
        """Fit on (n, T) targets with NaN for missing labels."""
        mean = np.nanmean(targets, axis=0)
        std = np.nanstd(targets, axis=0)
        mean = np.where(np.isfinite(mean), mean, 0.0)
        std = np.where(np.isfinite(std) & (std > 1e-12), std, 1.0)
        return cls(tuple(float(m) for m in mean), tuple(float(s) for s in std))

    @classmethod
    def identity(cls, n_targets: int) -> TargetScaler:
        return cls((0.0,) * n_targets, (1.0,) * n_targets)

    def transform(self, y: np.ndarray) -> np.ndarray:
        return (y - np.asarray(self.mean)) / np.asarray(self.std)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        return y * np.asarray(self.std) + np.asarray(self.mean)

    def inverse_std(self, s: np.ndarray) -> np.ndarray:
        return s * np.asarray(self.std)

    def to_dict(self) -> dict:
        return {"mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, data: dict) -> TargetScaler:
        return cls(tuple(data["mean"]), tuple(data["std"]))


__all__ = ["TargetScaler"]
