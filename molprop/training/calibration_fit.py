"""Fitting a model's calibration: conformal targets (regression, with the novelty ``beta``
search) and Platt scaling (classification). What is fitted is the data structure of
:mod:`molprop.artifact.calibration` (stored as ``calibration.json``, applied at prediction).

**Regression** (:func:`fit_conformal`). For each calibration molecule (the validation split at
train / fine-tune time, or the user's labelled table with ``molprop calibrate``) the target
keeps the residual ``y - ŷ`` (ensemble mean), the ensemble standard deviation ``std`` and the
``in_domain`` flag. The difficulty is ``sigma = std + offset`` with ``offset`` the median
calibration ``std`` (crepes' additive ``beta``: measured on the shipped models' validation
splits, a pure ``std`` made 90 % intervals cover ~75 % of the lowest-std third and ~100 % of the
highest and made them wider than plain split-conformal ones, because these small ensembles'
spread ranks errors only loosely); the nonconformity score is ``|y - ŷ| / sigma``. Single-model
artifacts (no spread) use ``sigma = 1`` (plain split-conformal). The std terciles' edges are the
calibration ``std``'s 1/3 and 2/3 quantiles (:func:`conformal_target`).

**Novelty scaling** (difficulty ``"std+novelty"``, the default):
``sigma = (std + offset) * (1 + beta * novelty)`` with ``novelty = 1 - max Tanimoto
similarity to the training set``. ``beta`` is chosen on the calibration set alone
(:func:`select_beta`: 5-fold cross-validation inside it, 10 repeats; the beta of the grid
``BETA_GRID`` whose held-out 90 % intervals cover the calibration set's three novelty terciles
most evenly, the smallest within ``BETA_TOLERANCE`` of the best); ``beta = 0`` — novelty does
not help on that set — gives exactly the std intervals. Without a domain (or SMILES) the std
difficulty is used. Measured on the shipped models: docs/results/calibration.md.

A calibration set too small for a finite 90 % interval (fewer than ``MIN_CALIBRATION`` = 10
molecules) is refused: the model stays uncalibrated.

**Classification** (:func:`fit_platt`): scikit-learn ``LogisticRegression`` without penalty on
``logit(p)`` with Platt's smoothed targets.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from molprop.artifact.calibration import (
    DEFAULT_DIFFICULTY,
    DEFAULT_LEVEL,
    DIFFICULTIES,
    MIN_BIN_SIZE,
    Calibration,
    ConformalTarget,
    PlattTarget,
    domain_codes,
    logit,
    novelty_values,
    servable,
)
from molprop.errors import ConfigError

log = logging.getLogger(__name__)

#: std bins: terciles of the calibration std
STD_BINS = 3
#: sigma = std + OFFSET_FRACTION * median(calibration std)
OFFSET_FRACTION = 1.0
#: fewest calibration molecules stored: enough for a finite interval at DEFAULT_LEVEL, so that
#: the default level is always served by a calibrated model
MIN_CALIBRATION = 10
#: candidate betas of the novelty scaling (0: the std difficulty)
BETA_GRID = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: beta selection: K-fold within the calibration set, repeated with seeds 0..REPEATS-1
BETA_FOLDS, BETA_REPEATS = 5, 10
#: the beta search runs on at most this many calibration molecules (a seeded random subset:
#: ~13 s for 3,000 on one core; the intervals themselves use every molecule)
BETA_MAX_MOLECULES = 5000
#: the smallest beta whose held-out score (mean |coverage - level| over the novelty terciles)
#: is within this of the best one wins
BETA_TOLERANCE = 0.01


def conformal_target(
    residuals: np.ndarray,
    stds: np.ndarray,
    domain: np.ndarray,
    min_bin_size: int,
    difficulty: str = "std",
    beta: float = 0.0,
    novelty: np.ndarray | None = None,
    selection: dict[str, Any] | None = None,
) -> ConformalTarget:
    """The target of these calibration scores: offset and std tercile edges (the fitting
    rule; ``stds`` not all finite: a single model, not normalised)."""
    offset: float | None = None
    edges: tuple[float, ...] = ()
    if np.isfinite(stds).all():
        offset = float(OFFSET_FRACTION * np.median(stds))
        if offset <= 0:  # every member agrees everywhere: a std floor keeps sigma > 0
            offset = float(max(np.abs(residuals).mean(), 1e-12))
        edges = tuple(float(q) for q in np.quantile(stds, np.arange(1, STD_BINS) / STD_BINS))
    else:
        stds = np.full(len(residuals), np.nan)
    fill = 0.0
    if novelty is not None and np.isfinite(novelty).any():
        fill = float(np.nanmedian(novelty))
    return ConformalTarget(
        residuals,
        stds,
        domain,
        offset,
        edges,
        int(min_bin_size),
        difficulty,
        float(beta),
        novelty,
        fill,
        selection,
    )


def fit_conformal(
    y: np.ndarray,
    y_hat: np.ndarray,
    std: np.ndarray | None,
    in_domain: Sequence[object] | np.ndarray | None,
    min_bin_size: int = MIN_BIN_SIZE,
    novelty: Sequence[float] | np.ndarray | None = None,
    difficulty: str = DEFAULT_DIFFICULTY,
) -> ConformalTarget:
    """A regression target's conformal calibration from the calibration molecules' labels,
    ensemble means, stds (None / NaN: a single model), domain flags (None: the artifact has no
    domain) and novelties (None: unknown; ``difficulty="std+novelty"`` then falls back to
    ``"std"``, logged)."""
    if difficulty not in DIFFICULTIES:
        raise ConfigError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    y, y_hat = np.asarray(y, dtype=np.float64), np.asarray(y_hat, dtype=np.float64)
    if len(y) == 0:
        raise ConfigError("no labelled calibration molecules")
    if not (np.isfinite(y).all() and np.isfinite(y_hat).all()):
        raise ConfigError("calibration labels and predictions must be finite")
    if not servable(len(y), DEFAULT_LEVEL):
        raise ConfigError(
            f"{len(y)} calibration molecules cannot give a {DEFAULT_LEVEL:.0%} conformal "
            f"interval (at least {MIN_CALIBRATION} are needed)"
        )
    stds = np.full(len(y), np.nan) if std is None else np.asarray(std, dtype=np.float64)
    domain = domain_codes(in_domain, len(y))
    nov = novelty_values(novelty, len(y))
    base = conformal_target(y - y_hat, stds, domain, min_bin_size)
    if difficulty == "std":
        return base
    if not np.isfinite(nov).all():
        log.info(
            "difficulty std+novelty needs the novelty of every calibration molecule (the "
            "artifact's applicability domain and SMILES); using the std difficulty"
        )
        return base
    beta, selection = select_beta(base.residuals, base.stds, domain, nov, min_bin_size)
    return conformal_target(
        base.residuals, base.stds, domain, min_bin_size, "std+novelty", beta, nov, selection
    )


def select_beta(
    residuals: np.ndarray,
    stds: np.ndarray,
    domain: np.ndarray,
    novelty: np.ndarray,
    min_bin_size: int = MIN_BIN_SIZE,
    grid: Sequence[float] = BETA_GRID,
    folds: int = BETA_FOLDS,
    repeats: int = BETA_REPEATS,
    level: float = DEFAULT_LEVEL,
) -> tuple[float, dict[str, Any]]:
    """The novelty scaling ``beta`` of ``sigma = (std + offset) * (1 + beta * novelty)``, from
    the calibration molecules alone.

    For each candidate, ``folds``-fold cross-validation within the calibration set (random
    folds, seeds 0..``repeats``-1; each fold's intervals fitted on the other folds with the same
    rule: offset, std terciles, Mondrian bins) gives every held-out molecule's ``level``
    interval. The score is the mean over the calibration set's *novelty terciles* of
    ``|held-out coverage in the tercile - level|``: a difficulty that knows the applicability
    domain covers the most novel third as well as the most familiar one, so a set more novel
    than the calibration set is covered too. (Mean width is the usual criterion of normalised
    conformal, but the narrowest intervals at a fixed marginal coverage come from giving up on
    the hardest molecules, the opposite of what novelty scaling is for.) The smallest beta whose
    score is within ``BETA_TOLERANCE`` of the best wins (0, the std difficulty, when novelty
    does not help). Returns (beta, record of the grid, per-beta score, tercile coverages and
    mean width). A set too small for ``level`` intervals in a fold keeps beta 0; a set larger
    than ``BETA_MAX_MOLECULES`` is searched on a seeded random subset of that size."""
    if len(residuals) > BETA_MAX_MOLECULES:
        pick = np.sort(np.random.default_rng(0).choice(len(residuals), BETA_MAX_MOLECULES, False))
        residuals, stds, domain, novelty = (a[pick] for a in (residuals, stds, domain, novelty))
    n = len(residuals)
    record: dict[str, Any] = {"grid": [float(b) for b in grid], "folds": folds,
                              "repeats": repeats, "level": level,
                              "criterion": "mean |held-out coverage - level| over the "
                              "calibration set's novelty terciles"}  # fmt: skip
    if n < folds or not servable(n - int(math.ceil(n / folds)), level):
        record["score"] = None
        return 0.0, record
    splits = []
    for seed in range(repeats):
        order = np.random.default_rng(seed).permutation(n)
        splits += [(np.setdiff1d(order, part), part) for part in np.array_split(order, folds)]
    tercile = np.digitize(novelty, np.quantile(novelty, [1 / 3, 2 / 3]))
    scores, coverages, widths = [], [], []
    for beta in grid:
        hit = np.zeros(n)
        width = 0.0
        for train, held in splits:
            target = conformal_target(
                residuals[train], stds[train], domain[train], min_bin_size,
                "std+novelty", float(beta), novelty[train],
            )  # fmt: skip
            low, high, _ = target.intervals(
                np.zeros(len(held)), stds[held], domain[held], level, novelty[held]
            )
            hit[held] += (residuals[held] >= low) & (residuals[held] <= high)
            width += float(np.sum(high - low))
        cov = [float(hit[tercile == t].mean() / repeats) for t in range(3) if (tercile == t).any()]
        coverages.append(cov)
        scores.append(float(np.mean(np.abs(np.asarray(cov) - level))))
        widths.append(width / (n * repeats))
    record.update(score=scores, tercile_coverage=coverages, mean_width=widths)
    best = min(scores)
    beta = next(b for b, v in zip(grid, scores, strict=True) if v <= best + BETA_TOLERANCE)
    return float(beta), record


def fit_platt(y: np.ndarray, p: np.ndarray) -> PlattTarget:
    """Platt scaling of one classification target, Platt (1999): unpenalised logistic
    regression of the 0/1 labels ``y`` on ``logit(p)`` with Platt's smoothed targets
    ``(n+ + 1) / (n+ + 2)`` and ``1 / (n- + 2)`` (as scikit-learn's
    ``CalibratedClassifierCV(method="sigmoid")``), which keeps a small calibration set from
    making the map too steep. The soft targets are fed to scikit-learn's
    ``LogisticRegression`` as each molecule twice, once per class, weighted by the target's
    probability."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(y, dtype=np.float64)
    if len(np.unique(y)) < 2:
        raise ConfigError("Platt scaling needs both classes among the calibration labels")
    n_pos, n_neg = float(y.sum()), float(len(y) - y.sum())
    soft = np.where(y > 0.5, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    x = logit(p)[:, None]
    model = LogisticRegression(C=np.inf).fit(
        np.concatenate([x, x]),
        np.concatenate([np.ones(len(y), int), np.zeros(len(y), int)]),
        sample_weight=np.concatenate([soft, 1 - soft]),
    )
    return PlattTarget(float(model.coef_[0, 0]), float(model.intercept_[0]), len(y))


def fit_calibration(
    task_type: str,
    names: Sequence[str],
    targets: np.ndarray,
    mean: np.ndarray,
    std: np.ndarray | None,
    in_domain: Sequence[object] | np.ndarray | None,
    fitted_on: str = "validation split",
    min_bin_size: int = MIN_BIN_SIZE,
    novelty: np.ndarray | None = None,
    difficulty: str = DEFAULT_DIFFICULTY,
) -> Calibration:
    """Fit one calibration per target on its labelled rows.

    Shapes:
        targets, mean: (n, T) labels (NaN: missing) and uncalibrated ensemble means (target
        units; mean probabilities for classifiers); std: (n, T) ensemble stds or None;
        in_domain: (n,) bool or None; novelty: (n,) ``1 - max similarity to the training set``
        or None (``difficulty="std+novelty"`` needs it, see :func:`fit_conformal`).
    """
    targets = np.asarray(targets, dtype=np.float64).reshape(len(targets), -1)
    mean = np.asarray(mean, dtype=np.float64).reshape(len(mean), -1)
    fitted: dict[str, ConformalTarget | PlattTarget] = {}
    skipped: dict[str, str] = {}
    for j, name in enumerate(names):
        ok = np.isfinite(targets[:, j]) & np.isfinite(mean[:, j])
        try:
            if not ok.any():
                raise ConfigError(f"no labelled calibration molecules for target {name!r}")
            if task_type == "classification":
                fitted[name] = fit_platt(targets[ok, j], mean[ok, j])
            else:
                s = None if std is None else np.asarray(std, dtype=np.float64)[ok, j]
                d = None if in_domain is None else np.asarray(in_domain)[ok]
                u = None if novelty is None else np.asarray(novelty, dtype=np.float64)[ok]
                fitted[name] = fit_conformal(
                    targets[ok, j], mean[ok, j], s, d, min_bin_size, u, difficulty
                )
        except ConfigError as exc:
            if len(names) == 1:
                raise
            skipped[name] = str(exc)
            log.warning("target %r is not calibrated: %s", name, exc)
    if not fitted:
        reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items())
        raise ConfigError(f"no target could be calibrated ({reasons})")
    return Calibration(task_type, fitted, fitted_on, skipped)


__all__ = [
    "BETA_GRID",
    "MIN_CALIBRATION",
    "conformal_target",
    "fit_calibration",
    "fit_conformal",
    "fit_platt",
    "select_beta",
]
