from __future__ import annotations

import numpy as np
import pytest

from molprop.training.metrics import compute_metrics, mcc, roc_auc


def test_regression_metrics_known_values():
    y = np.array([[1.0], [2.0], [3.0], [np.nan]])
    p = np.array([[1.0], [2.0], [5.0], [100.0]])
    m = compute_metrics(y, p, "regression")
    assert m["n"] == 3
    assert m["rmse"] == pytest.approx(np.sqrt(4 / 3))
    assert m["mae"] == pytest.approx(2 / 3)
    assert m["r2"] == pytest.approx(1 - 4 / 2)


def test_roc_auc_against_pairwise_definition():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p = np.round(rng.random(200), 1)  # ties on purpose
    pos, neg = p[y == 1], p[y == 0]
    pairwise = np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
    assert roc_auc(y, p) == pytest.approx(pairwise)
    assert np.isnan(roc_auc(np.ones(5), np.ones(5)))


def test_mcc_and_multitask_averaging():
    assert mcc(np.array([1, 0, 1, 0]), np.array([0.9, 0.1, 0.8, 0.2])) == pytest.approx(1.0)
    assert mcc(np.array([1, 0, 1, 0]), np.array([0.1, 0.9, 0.2, 0.8])) == pytest.approx(-1.0)
    y = np.array([[1, 0], [0, np.nan], [1, 1], [0, 0]], dtype=float)
    p = np.array([[0.9, 0.2], [0.2, 0.5], [0.7, 0.6], [0.4, 0.3]])
    m = compute_metrics(y, p, "classification", ["a", "b"])
    assert m["roc_auc/a"] == 1.0 and m["roc_auc/b"] == 1.0 and m["accuracy"] == 1.0
