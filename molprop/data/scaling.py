"""Target standardisation, fitted on the training split only: the one implementation of the
scaling (training targets go through :meth:`TargetScaler.transform`, predictions back through
:meth:`TargetScaler.inverse`). Its statistics are stored in ``config.json`` as
``task.scaler_mean`` / ``task.scaler_std`` (``molprop.models.config.TaskConfig.scaler``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TargetScaler:
    """Per-target ``(y - mean) / std``; identity for classification targets.

    Shapes: ``transform(y)`` / ``inverse(z)``: (..., T) -> (..., T)."""

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
        """Target units -> standardised values (what the model is trained on)."""
        return (y - np.asarray(self.mean)) / np.asarray(self.std)

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Standardised values (model outputs) -> target units."""
        return z * np.asarray(self.std) + np.asarray(self.mean)


__all__ = ["TargetScaler"]
