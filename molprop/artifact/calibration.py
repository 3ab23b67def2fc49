"""Calibration stored with a model: conformal intervals (regression), Platt scaling
(classification). ``calibration.json`` in the artifact directory; JSON only, never pickled:
the numbers are stored and the `crepes <https://github.com/henrikbostrom/crepes>`_ /
Platt objects rebuilt at load, so any interval level can be served. This module is the data
structure, its file and how it is applied at prediction; fitting it (the offset, the std
terciles, the novelty ``beta`` search, Platt's regression) is training's:
:mod:`molprop.training.calibration_fit`.

**Regression: normalised, Mondrian split-conformal intervals** (crepes ``ConformalRegressor``).
A target keeps, per calibration molecule, the residual ``y - ŷ`` (ensemble mean), the ensemble
standard deviation ``std`` and the ``in_domain`` flag. The difficulty is
``sigma = std + offset`` (``offset``: the median calibration ``std``); the nonconformity score
is ``|y - ŷ| / sigma``. Single-model artifacts (no spread) use ``sigma = 1`` (plain
split-conformal).

**Novelty scaling** (difficulty ``"std+novelty"``, the default since format version 2):
``sigma = (std + offset) * (1 + beta * novelty)`` with ``novelty = 1 - max Tanimoto
similarity to the training set`` (the artifact's domain file, :mod:`molprop.artifact.domain`)
and ``beta`` chosen on the calibration set; ``beta = 0`` gives exactly the std intervals. A
query whose novelty is unknown (a structure input) gets the calibration set's median novelty.
Measured on the shipped models: docs/results/calibration.md.

Mondrian bins (every query is served by the most specific bin that has at least
``min_bin_size`` = 30 calibration molecules; the pooled bin ``all`` always serves, whatever its
size)::

    in-domain / out-of-domain  x  std tercile  ->  in_domain bin  ->  std tercile  ->  all
    (domain unknown: std tercile -> all; single model: in_domain bin -> all)

The terciles' edges are the calibration ``std``'s 1/3 and 2/3 quantiles (stored). The std
terciles were kept because they measured to help on the two largest validation splits
(lipophilicity, HOMO-LUMO gap: per-tercile coverage of 90 % intervals within 1.5 % of nominal
instead of 8.5 % / 3.3 % off, and narrower intervals; 200 random halves of the validation split,
never the test split); on the small sets their bins are under 30 and fall back.
A level too high for the serving bin's size (crepes would return an infinite interval: it needs
``int((1 - level) * (n + 1)) >= 1``) also falls back along the chain; past the pooled bin the
level is refused (:meth:`Calibration.max_level`). A level at or below ``1 / (n + 1)`` gets each
bin's smallest score, however small it is (1e-20 included: :meth:`ConformalTarget.min_level`).

A file holding NaN, infinity or a value of the wrong kind (``json`` reads and writes the bare
words ``NaN`` and ``Infinity``) is refused at load with an :class:`ArtifactError` naming the
field, rather than giving NaN or infinite intervals.

**Classification: Platt scaling**: ``p_cal = sigmoid(a * logit(p) + b)`` per target, ``a``
and ``b`` stored (fitted by logistic regression on ``logit(p)``). The
calibrated probability is the reported value; the ensemble's mean probability stays available
as ``<target>_uncalibrated``.

Layout of ``calibration.json`` (format version 2)::

    {"format": "molprop-calibration", "version": 2, "task_type": "regression",
     "fitted_on": "validation split", "n": 112,
     "targets": {"logp": {"kind": "conformal", "offset": 0.09, "std_edges": [0.08, 0.12],
                          "min_bin_size": 30, "residuals": [...], "stds": [...],
                          "in_domain": [1, 0, -1, ...],      # -1: domain unknown
                          "difficulty": "std+novelty", "beta": 3.0,
                          "novelty": [0.41, ...], "novelty_fill": 0.38,
                          "beta_selection": {"grid": [...], "score": [...], ...},
                          "multipliers": {"levels": [0.01, ..., 0.99],
                                          "bins": {"all": [...], "in_domain": [...], ...}}}}}

``multipliers`` (optional; absent in older files) caches crepes' own per-bin multiplier of
sigma at the levels 0.01, 0.02, ..., 0.99 (None: the bin cannot serve that level), so that
serving those levels needs no crepes import (~1.5 s of scipy.stats / scikit-learn per process);
any other level, and files without the table, are computed by crepes. The intervals are
bit-identical either way (``tests/unit/artifact/test_calibration_multipliers.py``).

Version 1 files (no ``difficulty`` / ``beta`` / ``novelty``) load as difficulty ``"std"``,
beta 0: the same intervals as before (``tests/unit/artifact/test_calibration_novelty.py``).

    classification: "targets": {"p_np": {"kind": "platt", "a": 1.1, "b": -0.25, "n": 203}}

Artifacts without the file (written before calibration existed) still load: no intervals.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from molprop.artifact.paths import CALIBRATION_NAME, artifact_file
from molprop.errors import ArtifactError, ConfigError

log = logging.getLogger(__name__)

FORMAT = "molprop-calibration"
#: version 2 added the novelty-scaled difficulty (``difficulty``, ``beta``, ``novelty``); version
#: 1 files (std difficulty only) still load and give the same intervals
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
#: a Mondrian bin serves its own molecules only when it has at least this many calibration
#: molecules (else the next bin of the chain does, see the module docstring)
MIN_BIN_SIZE = 30
DEFAULT_LEVEL = 0.9
POOLED = "all"
#: difficulty of a molecule: ``"std"`` sigma = std + offset (format version 1);
#: ``"std+novelty"`` sigma = (std + offset) * (1 + beta * novelty), beta fitted on the
#: calibration set (:func:`molprop.training.calibration_fit.select_beta`)
DIFFICULTIES = ("std", "std+novelty")
DEFAULT_DIFFICULTY = "std+novelty"
#: levels whose per-bin interval multipliers (crepes' conformal quantile of the bin's scores)
#: are stored in calibration.json (``multipliers``), so that serving them needs no crepes import
#: (~1.5 s a process: scipy.stats, scikit-learn); any other level is computed by crepes
STORED_LEVELS = tuple(k / 100 for k in range(1, 100))
NOT_CALIBRATED = (
    "not calibrated: this artifact has no calibration.json (written before calibrated "
    "intervals existed), so no intervals are given; `molprop calibrate --model DIR --data CSV` "
    "adds them"
)


def check_level(level: float) -> float:
    """``level`` as a float strictly between 0 and 1 (``ConfigError`` otherwise)."""
    try:
        value = float(level)
    except (TypeError, ValueError):
        raise ConfigError(f"interval level must be a number in (0, 1), got {level!r}") from None
    if not (0.0 < value < 1.0) or not math.isfinite(value):
        raise ConfigError(f"interval level must be strictly between 0 and 1, got {level!r}")
    return value


def _finite(what: str, values: object, allow_none: bool = False) -> None:
    """``ValueError`` naming ``what`` unless every value is a finite number (``None`` too when
    ``allow_none``): NaN or infinity in a stored calibration would make every interval NaN or
    infinite, so such a file is refused at load."""
    items = values if isinstance(values, (list, tuple, np.ndarray)) else [values]
    for i, v in enumerate(items):
        if v is None and allow_none:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
            raise ValueError(f"{what}[{i}] is {v!r}, not a number")
        if not math.isfinite(float(v)):
            raise ValueError(f"{what}[{i}] is {v!r}: NaN and infinity are not allowed")


def servable(n: int, level: float) -> bool:
    """crepes' own condition for a finite interval from ``n`` scores at ``level``."""
    return n > 0 and int((1 - level) * (n + 1)) - 1 >= 0


def domain_codes(in_domain: Sequence[object] | np.ndarray | None, n: int) -> np.ndarray:
    """(n,) int8: 1 in domain, 0 out, -1 unknown."""
    if in_domain is None:
        return np.full(n, -1, dtype=np.int8)
    out = np.asarray(in_domain)
    if out.dtype.kind in "iu":
        return out.astype(np.int8)
    return np.where(out.astype(bool), 1, 0).astype(np.int8)


def novelty_values(novelty: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray:
    """(n,) float64 novelty in [0, 1] (NaN: unknown)."""
    if novelty is None:
        return np.full(n, np.nan)
    out = np.asarray(novelty, dtype=np.float64).reshape(-1)
    if len(out) != n:
        raise ConfigError(f"novelty has {len(out)} values for {n} molecules")
    return np.clip(out, 0.0, 1.0)


def novelty_from_similarity(similarity: np.ndarray | None) -> np.ndarray | None:
    """``1 - max Tanimoto similarity to the training set`` (None stays None)."""
    return None if similarity is None else 1.0 - np.asarray(similarity, dtype=np.float64)


@dataclass(frozen=True)
class ConformalTarget:
    """Normalised Mondrian split-conformal intervals for one regression target.

    Shapes:
        residuals, stds, in_domain, novelty: (n_cal,) of the calibration molecules: ``y - ŷ``,
        the ensemble std (NaN for a single model: not normalised), the domain code
        (1 / 0 / -1) and the novelty ``1 - max Tanimoto similarity to the training set``
        (NaN: unknown; only read when ``beta > 0``).

    ``difficulty`` ``"std"``: sigma = std + offset (format version 1); ``"std+novelty"``:
    sigma = (std + offset) * (1 + beta * novelty) with ``beta`` chosen on the calibration set
    (:func:`molprop.training.calibration_fit.select_beta`; ``beta_selection`` records its held-out scores); ``beta = 0`` gives
    exactly the std intervals. A query whose novelty is unknown (no SMILES, e.g. a structure
    input) gets ``novelty_fill``, the calibration set's median novelty.
    """

    residuals: np.ndarray
    stds: np.ndarray
    in_domain: np.ndarray
    offset: float | None
    std_edges: tuple[float, ...] = ()
    min_bin_size: int = MIN_BIN_SIZE
    difficulty: str = "std"
    beta: float = 0.0
    novelty: np.ndarray | None = None
    novelty_fill: float = 0.0
    beta_selection: dict[str, Any] | None = None
    #: level -> serving bin -> crepes' multiplier at that level (None: the bin cannot serve it),
    #: read from calibration.json (written by :meth:`to_dict`); None: not stored, crepes computes
    multipliers: dict[float, dict[str, float | None]] | None = field(default=None, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.residuals)

    @property
    def normalized(self) -> bool:
        return self.offset is not None

    # ------------------------------------------------------------------ bins

    def sigmas(self, std: np.ndarray, novelty: np.ndarray | None = None) -> np.ndarray:
        """Difficulty of each molecule (see the class docstring)."""
        if not self.normalized:
            base = np.ones(len(std))
        else:
            base = np.asarray(std, dtype=np.float64) + float(self.offset)  # type: ignore[arg-type]
        if self.beta == 0.0:
            return base
        u = novelty_values(novelty, len(std))
        u = np.where(np.isfinite(u), u, self.novelty_fill)
        return base * (1.0 + self.beta * u)

    def _chains(self, std: np.ndarray, domain: np.ndarray) -> list[list[str]]:
        """Per molecule, its bins from the most specific to ``all``."""
        known = bool((self.in_domain >= 0).any())  # the calibration set has domain flags
        terc = np.digitize(std, self.std_edges) if self.normalized else None
        chains = []
        for i in range(len(std)):
            d = {1: "in_domain", 0: "out_of_domain"}.get(int(domain[i])) if known else None
            t = f"std_t{int(terc[i])}" if terc is not None else None
            chain = []
            if d and t:
                chain.append(f"{d}/{t}")
            if d:
                chain.append(d)
            if t:
                chain.append(t)
            chains.append([*chain, POOLED])
        return chains

    def _bin_members(self) -> dict[str, np.ndarray]:
        """bin name -> indices of its calibration molecules."""
        if "members" not in self._cache:
            members: dict[str, list[int]] = {}
            for i, chain in enumerate(self._chains(self.stds, self.in_domain)):
                for key in chain:
                    members.setdefault(key, []).append(i)
            self._cache["members"] = {k: np.asarray(v) for k, v in members.items()}
        return self._cache["members"]

    def bin_sizes(self) -> dict[str, int]:
        """Calibration molecules per bin (bins a query may fall into)."""
        return {k: len(v) for k, v in sorted(self._bin_members().items())}

    def serving_bins(self) -> dict[str, int]:
        """The bins that serve their own molecules (>= ``min_bin_size``, and ``all``)."""
        return {k: n for k, n in self.bin_sizes().items() if n >= self.min_bin_size or k == POOLED}

    def regressor(self):
        """The crepes ``ConformalRegressor`` over every serving bin (a calibration molecule
        enters each bin of its chain: the bins overlap, so the scores are fed once per bin)."""
        if "regressor" not in self._cache:
            from crepes import ConformalRegressor

            members = self._bin_members()
            serving = list(self.serving_bins())
            residuals = np.concatenate([self.residuals[members[k]] for k in serving])
            nov = self.novelty if self.novelty is not None else np.full(self.n, np.nan)
            sigmas = np.concatenate(
                [self.sigmas(self.stds[members[k]], nov[members[k]]) for k in serving]
            )
            labels = np.concatenate([np.full(len(members[k]), j) for j, k in enumerate(serving)])
            self._cache["regressor"] = ConformalRegressor().fit(residuals, sigmas, labels)
            self._cache["serving"] = serving
        return self._cache["regressor"]

    def max_level(self) -> float:
        """Highest level the pooled bin serves with a finite interval."""
        n = self.n
        level = n / (n + 1)
        while level > 0 and not servable(n, level):  # float rounding of crepes' index
            level = math.nextafter(level, 0.0)
        return level

    def min_level(self) -> float:
        """The lowest level computed as asked: every level at or below ``1 / (n + 1)`` is
        served by each bin's smallest score (the conformal quantile cannot go lower), so a
        lower level is raised to ``0.5 / (n + 1)``, which gives the same intervals. (crepes
        reads its score index as ``int((1 - level) * (n + 1)) - 1``: for a level so small that
        ``1 - level`` rounds to 1, that index is one past the last score.)"""
        return 0.5 / (self.n + 1)

    def assign(
        self, std: np.ndarray, in_domain: Sequence[object] | np.ndarray | None, level: float
    ) -> list[str]:
        """The serving bin of each query at ``level``."""
        sizes = self.serving_bins()
        domain = domain_codes(in_domain, len(std))
        out = []
        for chain in self._chains(np.asarray(std, dtype=np.float64), domain):
            out.append(next((k for k in chain if k in sizes and servable(sizes[k], level)), ""))
        return out

    def intervals(
        self,
        y_hat: np.ndarray,
        std: np.ndarray | None,
        in_domain: Sequence[object] | np.ndarray | None,
        level: float,
        novelty: Sequence[float] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(low, high, serving bin) of each query. ``std`` None/NaN only for single models;
        ``in_domain`` None: unknown (std bins and the pooled bin serve); ``novelty`` (n,)
        ``1 - max similarity to the training set``, None / NaN: unknown (read only when
        ``beta > 0``)."""
        level = max(check_level(level), self.min_level())
        if level > self.max_level():
            raise ConfigError(
                f"interval level {level:g} needs more calibration molecules than the "
                f"{self.n} this model was calibrated on (highest level {self.max_level():.4f})"
            )
        y_hat = np.asarray(y_hat, dtype=np.float64)
        std = np.full(len(y_hat), np.nan) if std is None else np.asarray(std, dtype=np.float64)
        if self.normalized and not np.isfinite(std[np.isfinite(y_hat)]).all():
            raise ConfigError("this calibration needs the ensemble std of every prediction")
        keys = self.assign(std, in_domain, level)
        sig = self.sigmas(std, None if novelty is None else novelty_values(novelty, len(y_hat)))
        low, high = np.full(len(y_hat), np.nan), np.full(len(y_hat), np.nan)
        ok = np.isfinite(y_hat)
        stored = (self.multipliers or {}).get(level)
        if stored is not None and set(stored) != set(self.serving_bins()):
            log.warning("calibration.json's stored multipliers do not match its bins; ignored")
            stored = None
        if stored is not None and ok.any():
            # crepes' own numbers, stored: y_hat -/+ multiplier * sigma, as its predict_int
            alpha = np.asarray([stored[k] for k in keys], dtype=np.float64)
            low[ok] = y_hat[ok] - alpha[ok] * sig[ok]
            high[ok] = y_hat[ok] + alpha[ok] * sig[ok]
            return low, high, keys
        regressor = self.regressor()
        index = {k: j for j, k in enumerate(self._cache["serving"])}
        bins = np.asarray([index[k] for k in keys])
        if ok.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # bins are chosen so that none is infinite
                got = regressor.predict_int(y_hat[ok], sig[ok], bins[ok], confidence=level)
            low[ok], high[ok] = got[:, 0], got[:, 1]
        return low, high, keys

    def crepes_multipliers(
        self, levels: Sequence[float] = STORED_LEVELS
    ) -> dict[float, dict[str, float | None]]:
        """level -> serving bin -> the multiplier crepes' ``predict_int`` applies to sigma in
        that bin at that level (its conformal quantile of the bin's scores; None where the bin
        is too small for the level)."""
        regressor = self.regressor()
        serving, sizes = self._cache["serving"], self.serving_bins()
        out: dict[float, dict[str, float | None]] = {}
        for level in levels:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # bins too small for the level: None below
                got = regressor.predict_int(
                    np.zeros(len(serving)), np.ones(len(serving)), np.arange(len(serving)), level
                )
            out[float(level)] = {
                key: float(got[j, 1]) if servable(sizes[key], level) else None
                for j, key in enumerate(serving)
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        multipliers = self.crepes_multipliers()
        return {
            "kind": "conformal",
            "offset": self.offset,
            "std_edges": list(self.std_edges),
            "min_bin_size": self.min_bin_size,
            "n": self.n,
            "residuals": [float(v) for v in self.residuals],
            "stds": [None if not math.isfinite(v) else float(v) for v in self.stds],
            "in_domain": [int(v) for v in self.in_domain],
            "difficulty": self.difficulty,
            "beta": self.beta,
            "novelty": None
            if self.novelty is None
            else [None if not math.isfinite(v) else float(v) for v in self.novelty],
            "novelty_fill": self.novelty_fill,
            "beta_selection": self.beta_selection,
            "multipliers": {
                "levels": list(multipliers),
                "bins": {
                    k: [multipliers[lv][k] for lv in multipliers]
                    for k in next(iter(multipliers.values()))
                },
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConformalTarget:
        _finite("residuals", data["residuals"])
        _finite("stds", data["stds"], allow_none=True)
        for key in ("offset", "beta", "novelty_fill"):
            _finite(key, data.get(key), allow_none=True)
        _finite("std_edges", data.get("std_edges", []))
        if data.get("novelty") is not None:
            _finite("novelty", data["novelty"], allow_none=True)
        if any(v not in (-1, 0, 1) for v in data["in_domain"]):
            raise ValueError("in_domain must hold 1 (in), 0 (out) or -1 (unknown)")
        if int(data.get("min_bin_size", MIN_BIN_SIZE)) < 1:
            raise ValueError("min_bin_size must be at least 1")
        stds = np.asarray([np.nan if v is None else v for v in data["stds"]], dtype=np.float64)
        residuals = np.asarray(data["residuals"], dtype=np.float64)
        domain = np.asarray(data["in_domain"], dtype=np.int8)
        if not (len(residuals) == len(stds) == len(domain)) or len(residuals) == 0:
            raise ValueError("residuals, stds and in_domain must be non-empty and equally long")
        offset = data.get("offset")
        if offset is not None and float(offset) <= 0:
            raise ValueError(f"offset must be > 0, got {offset!r}")
        if (stds[np.isfinite(stds)] < 0).any():
            raise ValueError("stds must be >= 0")
        difficulty = str(data.get("difficulty", "std"))  # version 1: std only
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"unknown difficulty {difficulty!r}")
        novelty = data.get("novelty")
        if novelty is not None:
            novelty = np.asarray([np.nan if v is None else v for v in novelty], dtype=np.float64)
            if len(novelty) != len(residuals):
                raise ValueError("novelty must be as long as residuals")
        beta = float(data.get("beta", 0.0))
        if beta < 0 or (beta > 0 and novelty is None):
            raise ValueError("beta must be >= 0, and > 0 only with the calibration novelty")
        return cls(
            residuals,
            stds,
            domain,
            None if offset is None else float(offset),
            tuple(float(v) for v in data.get("std_edges", [])),
            int(data.get("min_bin_size", MIN_BIN_SIZE)),
            difficulty,
            beta,
            novelty,
            float(data.get("novelty_fill", 0.0)),
            data.get("beta_selection"),
            _read_multipliers(data.get("multipliers")),
        )


def _read_multipliers(data: dict[str, Any] | None) -> dict[float, dict[str, float | None]] | None:
    """calibration.json's ``multipliers`` (levels, bin -> one value per level) -> level -> bin
    -> multiplier; absent (files written before it) -> None."""
    if data is None:
        return None
    _finite("multipliers.levels", data["levels"])
    levels = [float(v) for v in data["levels"]]
    bins = data["bins"]
    if any(len(v) != len(levels) for v in bins.values()):
        raise ValueError("multipliers: every bin needs one value per level")
    for key, values in bins.items():
        _finite(f"multipliers.bins.{key}", values, allow_none=True)
    return {
        lv: {k: None if v[i] is None else float(v[i]) for k, v in bins.items()}
        for i, lv in enumerate(levels)
    }


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


@dataclass(frozen=True)
class PlattTarget:
    """Platt scaling of one classification target: ``sigmoid(a * logit(p) + b)``."""

    a: float
    b: float
    n: int

    def apply(self, p: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.a * logit(p) + self.b)))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "platt", "a": self.a, "b": self.b, "n": self.n}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlattTarget:
        _finite("a", data["a"])
        _finite("b", data["b"])
        return cls(float(data["a"]), float(data["b"]), int(data["n"]))


@dataclass(frozen=True)
class Calibration:
    """An artifact's calibration: one entry per target (``ConformalTarget`` for regression,
    ``PlattTarget`` for classification), what it was fitted on and how many molecules."""

    task_type: str
    targets: dict[str, ConformalTarget | PlattTarget]
    fitted_on: str = "validation split"
    #: targets of a multitask model left without calibration, with the reason (too few
    #: labelled calibration molecules, one class only): no interval / raw probability there
    not_calibrated: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return max((t.n for t in self.targets.values()), default=0)

    def max_level(self) -> float:
        """Highest interval level every target serves (1 for classifiers: no intervals)."""
        levels = [t.max_level() for t in self.targets.values() if isinstance(t, ConformalTarget)]
        return min(levels, default=1.0)

    def describe(self) -> str:
        """One line for the service and the card."""
        if self.task_type == "classification":
            return (
                f"probabilities Platt-calibrated on {self.n} molecules ({self.fitted_on}); "
                "the uncalibrated ensemble mean is <target>_uncalibrated"
            )
        betas = [
            f"{k}: beta {t.beta:g}"
            for k, t in self.targets.items()
            if isinstance(t, ConformalTarget) and t.difficulty == "std+novelty"
        ]
        scale = "the ensemble std"
        if betas:
            scale = (
                "the ensemble std x (1 + beta x novelty), novelty = 1 - max Tanimoto "
                f"similarity to the training set ({', '.join(betas)}; beta chosen on the "
                "calibration set)"
            )
        return (
            f"split-conformal intervals, normalised by {scale}, Mondrian bins by "
            f"applicability domain and std tercile; calibrated on {self.n} molecules "
            f"({self.fitted_on})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "task_type": self.task_type,
            "fitted_on": self.fitted_on,
            "n": self.n,
            "targets": {k: v.to_dict() for k, v in self.targets.items()},
            **({"not_calibrated": dict(self.not_calibrated)} if self.not_calibrated else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        if data.get("format") != FORMAT or data.get("version") not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"format {data.get('format')!r} version {data.get('version')!r} unsupported "
                f"(need {FORMAT!r} {' or '.join(map(str, SUPPORTED_VERSIONS))})"
            )
        targets: dict[str, ConformalTarget | PlattTarget] = {}
        for name, entry in data["targets"].items():
            kind = entry.get("kind")
            if kind == "conformal":
                targets[name] = ConformalTarget.from_dict(entry)
            elif kind == "platt":
                targets[name] = PlattTarget.from_dict(entry)
            else:
                raise ValueError(f"unknown calibration kind {kind!r} for target {name!r}")
        skipped = {str(k): str(v) for k, v in dict(data.get("not_calibrated", {})).items()}
        return cls(str(data["task_type"]), targets, str(data.get("fitted_on", "")), skipped)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / CALIBRATION_NAME
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def load(cls, directory: str | Path) -> Calibration | None:
        """The artifact's calibration, or None when it has no ``calibration.json``."""
        path = artifact_file(directory, CALIBRATION_NAME)
        if not path.exists():
            return None
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ArtifactError(f"corrupt calibration {path}: {exc}") from exc


__all__ = [
    "CALIBRATION_NAME",
    "DEFAULT_DIFFICULTY",
    "DEFAULT_LEVEL",
    "DIFFICULTIES",
    "MIN_BIN_SIZE",
    "NOT_CALIBRATED",
    "Calibration",
    "ConformalTarget",
    "PlattTarget",
    "check_level",
    "domain_codes",
    "logit",
    "novelty_from_similarity",
    "novelty_values",
    "servable",
]
