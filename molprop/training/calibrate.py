"""Calibrate an artifact and measure its calibration (the stored structure:
:mod:`molprop.artifact.calibration`; the fitting rules: :mod:`.calibration_fit`).

:func:`calibrate_artifact` fits the calibration on one labelled set (the validation split at
train / fine-tune time and for the shipped models), writes ``calibration.json`` and, when a test set is given, measures it there: coverage and mean
width of the intervals overall and per domain bin (regression), ECE and Brier score before and
after Platt scaling (classification). The predictions are the
:class:`~molprop.inference.Predictor`'s own (ensemble mean, std, ``in_domain`` from the
artifact's domain), uncalibrated. The test set is only ever predicted and scored, never passed to
the fitting function (``tests/unit/training/test_calibrate.py`` checks this).

:func:`fit_on`, :func:`raw_predictions`, :func:`measure`, :func:`summary` and
:func:`store_calibration` are the steps, shared by :mod:`.cv_calibrate` (out-of-fold
calibration) and :mod:`.recalibrate` (``molprop calibrate``: the user's table).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from molprop.artifact import Artifact
from molprop.artifact.calibration import (
    DEFAULT_DIFFICULTY,
    DEFAULT_LEVEL,
    Calibration,
    ConformalTarget,
    PlattTarget,
    novelty_from_similarity,
)
from molprop.errors import ConfigError
from molprop.inference import STATUS_OK, Predictor
from molprop.training.calibration_fit import fit_calibration
from molprop.training.metrics import brier, ece, interval_metrics
from molprop.training.tables import LabelledSet

log = logging.getLogger(__name__)
#: levels reported in metrics.json and the card
REPORT_LEVELS = (0.8, 0.9, 0.95)


@dataclass(frozen=True)
class RawPredictions:
    """Uncalibrated predictions of a set: mean (n, T), std (n, T) or None (one member),
    in_domain (n,) or None (no domain), ok (n,) rows predicted, novelty (n,)
    ``1 - max similarity to the training set`` or None (no domain)."""

    mean: np.ndarray
    std: np.ndarray | None
    in_domain: np.ndarray | None
    ok: np.ndarray
    novelty: np.ndarray | None = None


def raw_predictions(predictor: Predictor, data: LabelledSet) -> RawPredictions:
    """The predictor's uncalibrated ensemble mean, std and ``in_domain`` of ``data``."""
    frame = predictor.predict_graphs(list(data.items), calibrated=False, low=data.low)
    names = predictor.target_names
    mean = frame[names].to_numpy(dtype=np.float64)
    std_cols = [f"{n}_std" for n in names]
    std = frame[std_cols].to_numpy(dtype=np.float64) if std_cols[0] in frame else None
    ok = (frame["status"] == STATUS_OK).to_numpy()
    in_domain = novelty = None
    if predictor.domain is not None and data.smiles is not None:
        similarity, in_domain = predictor.domain.assess([str(s) for s in data.smiles])
        in_domain, novelty = in_domain & ok, novelty_from_similarity(similarity)
    return RawPredictions(mean, std, in_domain, ok, novelty)


def _rows(raw: RawPredictions, targets: np.ndarray) -> np.ndarray:
    return raw.ok & np.isfinite(np.asarray(targets, dtype=np.float64)).any(axis=1)


def fit_on(
    predictor: Predictor,
    data: LabelledSet,
    fitted_on: str = "validation split",
    difficulty: str = DEFAULT_DIFFICULTY,
) -> Calibration:
    """Fit the calibration of ``predictor`` on ``data`` (rows that failed are left out;
    ``difficulty``: see :func:`~molprop.training.calibration_fit.fit_conformal`)."""
    raw = raw_predictions(predictor, data)
    keep = _rows(raw, data.targets)
    if not keep.any():
        raise ConfigError("no predicted, labelled molecules to calibrate on")
    return fit_calibration(
        predictor.task_type,
        predictor.target_names,
        np.asarray(data.targets, dtype=np.float64)[keep],
        raw.mean[keep],
        None if raw.std is None else raw.std[keep],
        None if raw.in_domain is None else raw.in_domain[keep],
        fitted_on=fitted_on,
        novelty=None if raw.novelty is None else raw.novelty[keep],
        difficulty=difficulty,
    )


def _bin_report(y, low, high, in_domain) -> dict[str, Any]:
    out: dict[str, Any] = interval_metrics(y, low, high)
    if in_domain is not None:
        out["bins"] = {
            "in_domain": interval_metrics(y[in_domain], low[in_domain], high[in_domain]),
            "out_of_domain": interval_metrics(y[~in_domain], low[~in_domain], high[~in_domain]),
        }
    return out


def measure(
    calibration: Calibration,
    predictor: Predictor,
    data: LabelledSet,
    levels: Sequence[float] = REPORT_LEVELS,
    raw: RawPredictions | None = None,
) -> dict[str, Any]:
    """Per target, on ``data`` (never used to fit): interval coverage and mean width per level,
    overall and per domain bin, and the naive ensemble interval ``mean ± z·std`` at 0.9 for
    comparison (regression); ECE and Brier score of the raw and calibrated probabilities
    (classification)."""
    raw = raw or raw_predictions(predictor, data)
    targets = np.asarray(data.targets, dtype=np.float64)
    out: dict[str, Any] = {}
    for j, name in enumerate(predictor.target_names):
        keep = raw.ok & np.isfinite(targets[:, j])
        y, mean = targets[keep, j], raw.mean[keep, j]
        entry = calibration.targets.get(name)
        if entry is None:  # a target of a multitask model left without calibration
            out[name] = {"not_calibrated": calibration.not_calibrated.get(name, "")}
            continue
        if isinstance(entry, PlattTarget):
            p = entry.apply(mean)
            out[name] = {
                "n": int(keep.sum()),
                "ece": ece(y, p),
                "brier": brier(y, p),
                "ece_uncalibrated": ece(y, mean),
                "brier_uncalibrated": brier(y, mean),
            }
            continue
        assert isinstance(entry, ConformalTarget)
        std = None if raw.std is None else raw.std[keep, j]
        dom = None if raw.in_domain is None else raw.in_domain[keep]
        nov = None if raw.novelty is None else raw.novelty[keep]
        levels_out = {}
        for level in levels:
            if level > entry.max_level():
                continue
            low, high, _ = entry.intervals(mean, std, dom, level, nov)
            levels_out[f"{level:g}"] = _bin_report(y, low, high, dom)
        target_out: dict[str, Any] = {"n": int(keep.sum()), "levels": levels_out}
        if std is not None:
            z = NormalDist().inv_cdf(0.5 + DEFAULT_LEVEL / 2)
            naive = _bin_report(y, mean - z * std, mean + z * std, dom)
            target_out["naive_ensemble_0.9"] = naive
        out[name] = target_out
    return out


def summary(calibration: Calibration) -> dict[str, Any]:
    """What metrics.json says about the calibration itself."""
    out: dict[str, Any] = {
        "method": "platt" if calibration.task_type == "classification" else "conformal",
        "description": calibration.describe(),
        "fitted_on": calibration.fitted_on,
        "n": calibration.n,
    }
    if calibration.not_calibrated:
        out["not_calibrated_targets"] = dict(calibration.not_calibrated)
    if calibration.task_type != "classification":
        out["bins"] = {
            name: t.serving_bins()
            for name, t in calibration.targets.items()
            if isinstance(t, ConformalTarget)
        }
        out["max_level"] = calibration.max_level()
    else:
        out["platt"] = {
            name: {"a": t.a, "b": t.b}
            for name, t in calibration.targets.items()
            if isinstance(t, PlattTarget)
        }
    return out


def calibrate_artifact(
    directory: str | Path,
    calibration_set: LabelledSet,
    test: LabelledSet | None = None,
    fitted_on: str = "validation split",
    strict: bool = True,
) -> dict[str, Any]:
    """Fit the calibration of the artifact ``directory`` on ``calibration_set``, write
    ``calibration.json``, and return the ``"calibration"`` entry of ``metrics.json``: the
    summary plus, with ``test``, its measurement there (``"test"``).

    A calibration that cannot be fitted (fewer than 10 labelled molecules, one class only for
    Platt scaling) raises ``ConfigError``; with ``strict=False`` (training) it is logged, the
    artifact is left without calibration and the entry is ``{"not_calibrated": reason}``."""
    directory = Path(directory)
    Artifact(directory).remove_calibration()  # never keep a stale one
    predictor = Predictor.from_pretrained(directory)
    try:
        calibration = fit_on(predictor, calibration_set, fitted_on)
    except ConfigError as exc:
        if strict:
            raise
        log.warning("%s is not calibrated (no intervals): %s", directory, exc)
        return {"not_calibrated": str(exc)}
    return store_calibration(directory, calibration, predictor, test)


def store_calibration(
    directory: str | Path,
    calibration: Calibration,
    predictor: Predictor,
    test: LabelledSet | None = None,
) -> dict[str, Any]:
    """Write ``calibration`` into the artifact ``directory`` (whose ``predictor`` made the
    calibration predictions) and return the ``"calibration"`` entry of ``metrics.json``: the
    summary plus, with ``test``, its measurement there (``"test"``)."""
    Artifact(Path(directory)).write_calibration(calibration)
    log.info("calibrated %s: %s", directory, calibration.describe())
    report = summary(calibration)
    if test is not None and len(test):
        report["test"] = measure(calibration, predictor, test)
    return report


__all__ = [
    "RawPredictions",
    "calibrate_artifact",
    "fit_on",
    "measure",
    "raw_predictions",
    "store_calibration",
    "summary",
]
