"""Calibrated outputs of a :class:`~molprop.inference.Predictor` (see
:mod:`molprop.artifact.calibration`).

* Regression: ``<target>_low`` and ``<target>_high``, the conformal interval at the requested
  level (default 0.9; ``None`` / ``0`` / ``"none"`` turn it off), computed from the ensemble
  mean, its std and ``in_domain``. NaN for failed rows.
* Classification: ``<target>`` is the Platt-calibrated probability and
  ``<target>_uncalibrated`` the ensemble's mean probability.

An artifact without ``calibration.json`` (written before calibration existed) predicts as
before: no interval columns, uncalibrated probabilities, and one log line per loaded model
saying so (:data:`~molprop.artifact.calibration.NOT_CALIBRATED`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from molprop.artifact.calibration import (
    NOT_CALIBRATED,
    Calibration,
    ConformalTarget,
    PlattTarget,
    check_level,
)
from molprop.artifact.coverage import MeasuredCoverage
from molprop.errors import ConfigError

log = logging.getLogger(__name__)
_OFF = {"", "0", "none", "off", "no", "false"}


def interval_level(value: object) -> float | None:
    """The requested interval level: None when off (``None``, ``0``, ``False``, ``"none"``,
    ``"off"``), else a float strictly between 0 and 1 (``ConfigError`` otherwise)."""
    if value is None or value is False:
        return None
    if isinstance(value, str):
        if value.strip().lower() in _OFF:
            return None
        value = value.strip()
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return None
    return check_level(value)  # type: ignore[arg-type]


def coverage_warnings(
    coverage: Mapping[str, Sequence[MeasuredCoverage]], level: float | None, model: str
) -> list[str]:
    """One line per target of ``model`` whose intervals at ``level`` covered its test
    molecules significantly less than ``level`` (``coverage``: target -> measured coverages,
    :meth:`~molprop.inference.Predictor.interval_coverage`), for the log of a prediction run."""
    if level is None:
        return []
    lines = []
    for target, measured in coverage.items():
        for c in measured:
            if abs(c.level - level) < 1e-9 and c.verdict == "below":
                lines.append(
                    f"{model} {target}: {c.describe()}, significantly below {level:.0%}: read "
                    "these intervals as too narrow (see the model card)"
                )
    return lines


def check_servable(calibration: Calibration | None, level: float | None) -> None:
    """Raise ``ConfigError`` when ``level`` is above what the calibration set can serve."""
    if calibration is None or level is None:
        return
    top = calibration.max_level()
    if level > top:
        raise ConfigError(
            f"interval level {level:g} needs more calibration molecules than the "
            f"{calibration.n} this model was calibrated on (highest level {top:.4f})"
        )


def calibrate_probabilities(
    frame: pd.DataFrame, calibration: Calibration | None, names: Sequence[str]
) -> None:
    """Classification: replace each target's mean probability by its Platt-calibrated value and
    keep the mean as ``<target>_uncalibrated`` (inserted before ``status``)."""
    if calibration is None:
        return
    for name in names:
        platt = calibration.targets.get(name)
        if not isinstance(platt, PlattTarget):
            continue
        raw = frame[name].to_numpy(dtype=np.float64)
        ok = np.isfinite(raw)
        calibrated = np.full(len(raw), np.nan)
        calibrated[ok] = platt.apply(raw[ok])
        at = cast(int, frame.columns.get_loc("status"))  # a unique column: its position
        frame.insert(at, f"{name}_uncalibrated", raw)
        frame[name] = calibrated


def add_intervals(
    frame: pd.DataFrame,
    calibration: Calibration | None,
    names: Sequence[str],
    level: float | None,
    in_domain: np.ndarray | None,
    novelty: np.ndarray | None = None,
) -> None:
    """Regression: append ``<target>_low`` / ``<target>_high`` at ``level`` (nothing when
    ``level`` is None or the model has no conformal calibration). ``in_domain``: (n,) bool of
    the rows, or None when unknown (the std bins and the pooled bin serve); ``novelty``: (n,)
    ``1 - max similarity to the training set`` or None (unknown; read only by a novelty-scaled
    calibration, which then uses its calibration set's median novelty)."""
    if level is None or calibration is None:
        return
    for name in names:
        target = calibration.targets.get(name)
        if not isinstance(target, ConformalTarget):
            continue
        std_col = f"{name}_std"
        std = frame[std_col].to_numpy(dtype=np.float64) if std_col in frame else None
        low, high, _ = target.intervals(
            frame[name].to_numpy(dtype=np.float64), std, in_domain, level, novelty
        )
        frame[f"{name}_low"] = low
        frame[f"{name}_high"] = high


_NOTED: set[str] = set()


def note_uncalibrated(directory: object, task_type: str) -> None:
    """The log line for a model without calibration (once per artifact and process, at its
    first prediction)."""
    if str(directory) in _NOTED:
        return
    _NOTED.add(str(directory))
    what = "no interval columns" if task_type != "classification" else "uncalibrated probabilities"
    log.warning("model %s is %s (%s)", directory, NOT_CALIBRATED, what)


__all__ = [
    "add_intervals",
    "calibrate_probabilities",
    "check_servable",
    "interval_level",
    "note_uncalibrated",
]
