"""Sampling noise of a measured coverage (``benchmarks.calibration.sampling_noise``): the
Clopper-Pearson interval and the chance that a perfectly calibrated 90 % method lands in the
87-93 % band, checked against their definitions and a seeded simulation."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from benchmarks.calibration import sampling_noise


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
