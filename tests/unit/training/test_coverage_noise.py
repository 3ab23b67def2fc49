"""Sampling noise of a measured coverage (``benchmarks.calibration.sampling_noise``): the
Clopper-Pearson interval and the chance that a perfectly calibrated 90 % method lands in the
87-93 % band, checked against their definitions and a seeded simulation."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from benchmarks.calibration import checks, sampling_noise


def test_clopper_pearson_bounds_are_exact_tail_probabilities():
    got = sampling_noise(58 / 65, 65)
    low, high = got["clopper_pearson_95"]
    assert got["covered"] == 58
    assert abs(binom.sf(57, 65, low) - 0.025) < 1e-9  # P(X >= 58 | low) = 2.5 %
    assert abs(binom.cdf(58, 65, high) - 0.025) < 1e-9  # P(X <= 58 | high) = 2.5 %


def test_band_probabilities_match_a_simulation():
    rng = np.random.default_rng(0)
    for n, n_cal in ((65, 21), (65, 64), (420, 420)):
        got = sampling_noise(0.9, n, n_cal)
        # Binomial: every molecule covered with probability 0.9
        k = rng.binomial(n, 0.9, 200_000)
        band = (k / n >= 0.87) & (k / n <= 0.93)
        assert abs(got["p_band_binomial"] - band.mean()) < 0.01
        # split-conformal on n_cal exchangeable scores: the test coverage is the probability
        # that a new score is at most the ceil(0.9 (n_cal + 1))-th smallest calibration score
        scores = rng.random((20_000, n_cal))
        rank = int(np.ceil(0.9 * (n_cal + 1)))
        q = np.sort(scores, axis=1)[:, rank - 1]
        k = rng.binomial(n, q)
        band = (k / n >= 0.87) & (k / n <= 0.93)
        assert abs(got["p_band_conformal"] - band.mean()) < 0.015
    # about one half for FreeSolv's 65 test molecules (0.59 by the binomial alone)
    assert 0.5 < sampling_noise(0.9, 65)["p_band_binomial"] < 0.65


def test_checks_judge_each_set_by_its_clopper_pearson_interval():
    # 62 of 65 = 95.4 %: outside the former 87-93 % band, but 90 % is in its CP interval
    report = {
        "coverage": 62 / 65,
        "n": 65,
        "bins": {
            "in_domain": {"coverage": 300 / 360, "n": 360},  # 83.3 %: CP excludes 90 %
            "out_of_domain": {"coverage": 10 / 20, "n": 20},  # < 30 molecules: not checked
        },
    }
    got = checks(report)
    assert got["overall"]["pass"] and not got["overall"]["in_band"]
    low, high = got["overall"]["clopper_pearson_95"]
    assert low <= 0.9 <= high
    assert got["in_domain"]["pass"] is False and got["in_domain"]["clopper_pearson_95"][1] < 0.9
    assert got["out_of_domain"]["pass"] is None
    # 560 of 630 = 88.9 %: inside the band and its CP interval holds 90 %
    close = checks({"coverage": 560 / 630, "n": 630})
    assert close["overall"]["pass"] and close["overall"]["in_band"]
    # 500 of 630 = 79.4 %: a miss either way
    assert not checks({"coverage": 500 / 630, "n": 630})["overall"]["pass"]
