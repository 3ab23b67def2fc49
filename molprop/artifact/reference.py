"""Percentiles among approved drugs: a model's predictions over a reference set, stored with it.

ADMET pages show each predicted value as a percentile among approved drugs ("this logS is lower
than 80 % of approved drugs"). The distribution is computed once, when the model is built
(:func:`molprop.training.reference.fit_reference`), and stored in the artifact as
``reference.json``; a percentile then costs a binary search at request time.

Format (``molprop-reference`` version 1)::

    {"format": "molprop-reference", "version": 1,
     "name": "approved drugs (ClinTox FDA-approved, 1380 molecules)", "n": 1371,
     "sha256": "<sha256 of the reference SMILES file>",
     "targets": {"<target>": {"quantiles": [q_0, q_0.5, ..., q_100]}}}

``quantiles`` are the 0th, 0.5th, ..., 100th percentiles (201 values, non-decreasing) of the
model's predictions over the reference molecules it predicts (``n``; the others are refused by
its chemistry checks). :meth:`Reference.percentile` interpolates linearly between them, 0 below
the lowest prediction and 100 above the highest; NaN stays NaN.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from molprop.artifact.paths import REFERENCE_NAME, artifact_file
from molprop.errors import ArtifactError

FORMAT = "molprop-reference"
VERSION = 1
#: the stored percentile levels: 0, 0.5, ..., 100
LEVELS = np.linspace(0.0, 100.0, 201)


@dataclass(frozen=True)
class Reference:
    """Per-target quantiles of a model's predictions over a reference set (see module doc)."""

    name: str
    n: int
    sha256: str
    quantiles: Mapping[str, tuple[float, ...]]

    @classmethod
    def fit(cls, name: str, sha256: str, predictions: Mapping[str, np.ndarray]) -> Reference:
        """From the model's predictions per target (NaN rows, refused molecules, dropped)."""
        quantiles, n = {}, 0
        for target, values in predictions.items():
            values = np.asarray(values, dtype=float)
            values = values[np.isfinite(values)]
            if len(values) < 2:
                raise ArtifactError(f"reference {name!r}: {len(values)} predictions of {target!r}")
            quantiles[target] = tuple(float(q) for q in np.percentile(values, LEVELS))
            n = max(n, len(values))
        return cls(name, n, sha256, quantiles)

    def percentile(self, target: str, values: ArrayLike) -> np.ndarray:
        """Percentile (0–100) of each value among the reference predictions of ``target``."""
        q = np.asarray(self.quantiles[target])
        values = np.asarray(values, dtype=float)
        out = np.full(values.shape, np.nan)
        for i in np.flatnonzero(np.isfinite(values)):
            v = values.flat[i]
            left, right = np.searchsorted(q, v, "left"), np.searchsorted(q, v, "right")
            if right > left:  # equal to stored quantiles (ties): the middle of their levels
                out.flat[i] = (LEVELS[left] + LEVELS[right - 1]) / 2
            elif left == 0:
                out.flat[i] = 0.0
            elif left == len(q):
                out.flat[i] = 100.0
            else:  # between two quantiles: linear
                t = (v - q[left - 1]) / (q[left] - q[left - 1])
                out.flat[i] = LEVELS[left - 1] + t * (LEVELS[left] - LEVELS[left - 1])
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "n": self.n,
            "sha256": self.sha256,
            "targets": {k: {"quantiles": list(v)} for k, v in self.quantiles.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str = REFERENCE_NAME) -> Reference:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ArtifactError(
                f"{origin}: format {data.get('format')!r} version {data.get('version')!r} "
                f"unsupported (need {FORMAT!r} {VERSION})"
            )
        quantiles = {}
        for target, entry in data["targets"].items():
            q = tuple(float(v) for v in entry["quantiles"])
            if len(q) != len(LEVELS) or not all(math.isfinite(v) for v in q):
                raise ArtifactError(
                    f"{origin}: {target!r} needs {len(LEVELS)} finite quantiles, got {len(q)}"
                )
            if any(b < a for a, b in zip(q, q[1:])):
                raise ArtifactError(f"{origin}: {target!r} quantiles are not non-decreasing")
            quantiles[target] = q
        return cls(str(data["name"]), int(data["n"]), str(data["sha256"]), quantiles)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / REFERENCE_NAME
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def load(cls, directory: str | Path) -> Reference | None:
        """The artifact's reference distribution, or None when it has none."""
        path = artifact_file(directory, REFERENCE_NAME)  # never a link out of the directory
        if not path.exists():
            return None
        try:
            return cls.from_dict(json.loads(path.read_text()), str(path))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"corrupt {path}: {exc}") from exc


__all__ = ["LEVELS", "REFERENCE_NAME", "Reference"]
