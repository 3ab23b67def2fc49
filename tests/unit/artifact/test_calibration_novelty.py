"""Novelty-scaled conformal intervals (difficulty ``std+novelty``, calibration format 2).

A planted novelty-dependent noise (residuals grow with ``1 - similarity to the training set``)
breaks the coverage of the std-only intervals on a more novel query set and is fixed by the
novelty scaling, whose beta is chosen on the calibration set alone; noise that does not
depend on novelty keeps beta 0 (the std intervals exactly). Old (version 1) calibration files
load and give the intervals they gave before: golden values computed with the version-1 code
from a copy of the shipped solubility calibration.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from molprop.artifact.calibration import Calibration, ConformalTarget
from molprop.errors import ConfigError
from molprop.training.calibration_fit import fit_calibration, fit_conformal, select_beta

DATA = Path(__file__).parent / "data"


def _planted(rng: np.random.Generator, n: int, low: float, high: float, k: float):
    """(novelty, std, residual): noise ~ (std + 0.2) * (1 + k * novelty)."""
    novelty = rng.uniform(low, high, n)
    std = rng.uniform(0.1, 0.3, n)
    residual = rng.normal(0.0, 1.0, n) * (std + 0.2) * (1.0 + k * novelty)
    return novelty, std, residual


def _coverage(target: ConformalTarget, novelty, std, residual) -> float:
    low, high, _ = target.intervals(np.zeros(len(std)), std, None, 0.9, novelty)
    return float(np.mean((residual >= low) & (residual <= high)))


def test_novelty_scaling_fixes_planted_novelty_dependent_noise():
    rng = np.random.default_rng(0)
    u, std, r = _planted(rng, 600, 0.0, 0.8, k=4.0)  # calibration: familiar to novel
    old = fit_conformal(r, np.zeros(600), std, None, difficulty="std")
    new = fit_conformal(r, np.zeros(600), std, None, novelty=u, difficulty="std+novelty")
    uq, sq, rq = _planted(rng, 4000, 0.5, 0.8, k=4.0)  # queries: the more novel part
    assert old.beta == 0.0 and new.beta >= 2.0
    assert _coverage(old, uq, sq, rq) < 0.85  # measured 0.827: the std scale under-covers
    assert abs(_coverage(new, uq, sq, rq) - 0.9) < 0.03  # measured 0.905
    # the pooled (exchangeable) coverage stays nominal either way
    up, sp, rp = _planted(rng, 4000, 0.0, 0.8, k=4.0)
    assert abs(_coverage(new, up, sp, rp) - 0.9) < 0.02


def test_novelty_independent_noise_keeps_beta_zero_and_std_intervals():
    rng = np.random.default_rng(1)
    u, std, r = _planted(rng, 600, 0.0, 0.8, k=0.0)
    old = fit_conformal(r, np.zeros(600), std, None, difficulty="std")
    new = fit_conformal(r, np.zeros(600), std, None, novelty=u, difficulty="std+novelty")
    assert new.beta == 0.0 and new.difficulty == "std+novelty"
    uq, sq, _ = _planted(rng, 50, 0.0, 1.0, k=0.0)
    a = old.intervals(np.zeros(50), sq, None, 0.9)
    b = new.intervals(np.zeros(50), sq, None, 0.9, uq)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_beta_selection_sees_only_the_calibration_set():
    rng = np.random.default_rng(2)
    u, std, r = _planted(rng, 300, 0.0, 0.8, k=4.0)
    domain = np.ones(300, dtype=np.int8)
    beta, record = select_beta(r, std, domain, u)
    assert beta == fit_conformal(r, np.zeros(300), std, domain, novelty=u,
                                       difficulty="std+novelty").beta  # fmt: skip
    assert len(record["score"]) == len(record["grid"]) and record["folds"] == 5
    # too few molecules for 90 % intervals inside a fold: beta 0, no scores
    small_beta, small = select_beta(r[:10], std[:10], domain[:10], u[:10])
    assert small_beta == 0.0 and small["score"] is None


def test_version_2_round_trip_and_missing_novelty(tmp_path):
    rng = np.random.default_rng(3)
    u, std, r = _planted(rng, 200, 0.0, 0.8, k=4.0)
    y_hat = rng.normal(0, 1, 200)
    cal = fit_calibration(
        "regression", ["t"], (y_hat + r)[:, None], y_hat[:, None], std[:, None],
        u < 0.5, novelty=u,
    )  # fmt: skip
    target = cal.targets["t"]
    assert isinstance(target, ConformalTarget) and target.beta > 0
    cal.save(tmp_path)
    data = json.loads((tmp_path / "calibration.json").read_text())
    assert data["version"] == 2 and data["targets"]["t"]["difficulty"] == "std+novelty"
    back = Calibration.load(tmp_path).targets["t"]
    q = np.linspace(0.1, 0.9, 9)
    np.testing.assert_array_equal(
        target.intervals(q, q / 3, q > 0.5, 0.9, q)[0], back.intervals(q, q / 3, q > 0.5, 0.9, q)[0]
    )
    # unknown novelty (a structure input): the calibration set's median novelty
    unknown = back.intervals(q, q / 3, q > 0.5, 0.9, None)
    median = back.intervals(q, q / 3, q > 0.5, 0.9, np.full(9, np.median(u)))
    np.testing.assert_allclose(unknown[0], median[0])
    # no novelty for the calibration molecules (no domain): the std difficulty
    plain = fit_calibration("regression", ["t"], (y_hat + r)[:, None], y_hat[:, None],
                            std[:, None], None).targets["t"]  # fmt: skip
    assert plain.beta == 0.0
    with pytest.raises(ConfigError, match="difficulty"):
        fit_conformal(r, y_hat, std, None, novelty=u, difficulty="novelty-only")


def test_version_1_file_loads_with_the_same_intervals():
    cal = Calibration.from_dict(json.loads((DATA / "calibration_v1_solubility.json").read_text()))
    golden = json.loads((DATA / "calibration_v1_solubility_intervals.json").read_text())
    target = cal.targets[golden["target"]]
    assert target.difficulty == "std" and target.beta == 0.0
    y_hat, std = np.asarray(golden["y_hat"]), np.asarray(golden["std"])
    dom = np.asarray(golden["in_domain"], dtype=bool)
    novelty = np.linspace(0.0, 1.0, len(std))  # ignored by a version-1 calibration
    for level, want in golden["levels"].items():
        low, high, bins = target.intervals(y_hat, std, dom, float(level), novelty)
        np.testing.assert_array_equal(low, want["low"])
        np.testing.assert_array_equal(high, want["high"])
        assert bins == want["bins"]
    low, high, _ = target.intervals(y_hat, std, None, 0.9)
    np.testing.assert_array_equal(low, golden["unknown_domain_0.9"]["low"])
    np.testing.assert_array_equal(high, golden["unknown_domain_0.9"]["high"])
