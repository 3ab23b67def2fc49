"""Metrics: RMSE, MAE, R² (regression); MCC, ROC-AUC, accuracy, Brier score and expected
calibration error (classification); coverage and width of prediction intervals.

Each is computed per target over labelled entries (NaN = missing) and averaged over targets.
"""

from __future__ import annotations

import numpy as np


def _rank(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties share their mean rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def roc_auc(y: np.ndarray, p: np.ndarray) -> float:
    """Area under the ROC curve (Mann–Whitney U); NaN if only one class is present."""
    y = np.asarray(y).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = _rank(np.asarray(p, dtype=np.float64))
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mcc(y: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> float:
    y = np.asarray(y).astype(bool)
    pred = np.asarray(p) >= threshold
    tp = float(np.sum(pred & y))
    tn = float(np.sum(~pred & ~y))
    fp = float(np.sum(pred & ~y))
    fn = float(np.sum(~pred & y))
    denom = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denom) if denom > 0 else 0.0


def brier(y: np.ndarray, p: np.ndarray) -> float:
    """Brier score: mean squared difference between the probability and the 0/1 label."""
    y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    return float(np.mean((p - y) ** 2))


ECE_BINS = 10


def ece(y: np.ndarray, p: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Expected calibration error: the probabilities cut into ``n_bins`` equal-width bins
    ([0, 0.1), ..., [0.9, 1]); the mean over molecules of |fraction positive - mean probability|
    of their bin."""
    y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    if len(y) == 0:
        return float("nan")
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        inside = bins == b
        total += inside.sum() * abs(y[inside].mean() - p[inside].mean())
    return float(total / len(y))


def interval_metrics(y: np.ndarray, low: np.ndarray, high: np.ndarray) -> dict[str, float]:
    """Coverage (fraction of labels inside [low, high]), mean width and count."""
    y, low, high = (np.asarray(a, dtype=np.float64) for a in (y, low, high))
    if len(y) == 0:
        return {"coverage": float("nan"), "mean_width": float("nan"), "n": 0}
    inside = (y >= low) & (y <= high)
    return {
        "coverage": float(inside.mean()),
        "mean_width": float(np.mean(high - low)),
        "n": int(len(y)),
    }


def regression_metrics(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    err = pred - y
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return {
        "rmse": float(np.sqrt(np.mean(err**2))),
        "mae": float(np.mean(np.abs(err))),
        "r2": float(1 - np.sum(err**2) / ss_tot) if ss_tot > 0 else float("nan"),
    }


def classification_metrics(y: np.ndarray, prob: np.ndarray) -> dict[str, float]:
    return {
        "roc_auc": roc_auc(y, prob),
        "mcc": mcc(y, prob),
        "accuracy": float(np.mean((prob >= 0.5) == y.astype(bool))),
        "brier": brier(y, prob),
        "ece": ece(y, prob),
    }


def compute_metrics(
    targets: np.ndarray, preds: np.ndarray, task_type: str, names: list[str] | None = None
) -> dict[str, float]:
    """targets/preds: (n, T) in target units (probabilities for classification).

    Returns the mean over targets of each metric, plus ``<metric>/<target>`` per target when
    there are several targets, and ``n`` (labelled entries).
    """
    targets = np.asarray(targets, dtype=np.float64).reshape(len(targets), -1)
    preds = np.asarray(preds, dtype=np.float64).reshape(len(preds), -1)
    names = names or [f"task_{j}" for j in range(targets.shape[1])]
    fn = classification_metrics if task_type == "classification" else regression_metrics
    per_target: list[dict[str, float]] = []
    out: dict[str, float] = {}
    n = 0
    for j in range(targets.shape[1]):
        ok = np.isfinite(targets[:, j])
        n += int(ok.sum())
        if ok.sum() == 0:
            continue
        m = fn(targets[ok, j], preds[ok, j])
        per_target.append(m)
        if targets.shape[1] > 1:
            out.update({f"{k}/{names[j]}": v for k, v in m.items()})
    if per_target:
        for key in per_target[0]:
            out[key] = float(np.nanmean([m[key] for m in per_target]))
    out["n"] = n
    return out
