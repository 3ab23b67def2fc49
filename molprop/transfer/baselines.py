"""Baselines a fine-tuned model must beat, computed on its own held-out parts.

* ``mean``: the training labels' mean (regression) or prevalence (classification), per target;
* ``start``: the starting model as it is, one of its targets' prediction used directly for each
  fine-tuned target (only when its task type is the fine-tune's): :func:`start_columns` picks
  which — the kept head's own output, else the starting target of the same name, else its only
  target, else (a multitask start, e.g. ``admet_regression``, fine-tuned on a differently named
  assay) the one whose prediction correlates best (Pearson ``|r|``) with the labels of the
  training part;
* ``start_linear``: a linear model on that prediction, fitted on the training part (least
  squares ``y ~ a + b·p``; classification: a logistic regression on the starting model's
  probability).

:func:`verdict` compares the fine-tuned ensemble with them on validation (else test): RMSE
(lower is better) or ROC AUC (higher is better), and says plainly when it does not beat one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from molprop.training.metrics import compute_metrics

BASELINES = ("mean", "start", "start_linear")


def _fit_linear(p: np.ndarray, y: np.ndarray, task_type: str):
    """-> a function mapping the starting prediction ``p`` (n,) to the baseline's prediction,
    fitted on the training pairs where ``y`` and ``p`` are finite; None when it cannot be."""
    ok = np.isfinite(y) & np.isfinite(p)
    if ok.sum() < 2:
        return None
    if task_type == "classification":
        from sklearn.linear_model import LogisticRegression

        labels = y[ok].astype(int)
        if len(np.unique(labels)) < 2:
            return None
        model = LogisticRegression().fit(p[ok, None], labels)
        return lambda q: model.predict_proba(q[:, None])[:, 1]
    design = np.column_stack([np.ones(ok.sum()), p[ok]])
    (a, b), *_ = np.linalg.lstsq(design, y[ok], rcond=None)
    return lambda q: a + b * q


def start_columns(
    names: list[str],
    start_names: list[str],
    train_labels: np.ndarray,
    train_start: np.ndarray,
    kept_head: bool = False,
) -> dict[str, dict[str, str]]:
    """For each fine-tuned target, the starting model's target whose prediction its ``start``
    baselines use, and why: ``"kept head"`` (its own output: the head is kept), ``"same
    name"``, ``"only target"``, or ``"best |r| on the training part"`` (the largest absolute
    Pearson correlation between the starting prediction and the target's training labels;
    ``train_labels`` (n, T), ``train_start`` (n, T_start))."""
    y = np.asarray(train_labels, dtype=np.float64).reshape(len(train_labels), -1)
    p = np.asarray(train_start, dtype=np.float64).reshape(len(train_start), -1)
    out: dict[str, dict[str, str]] = {}
    for j, name in enumerate(names):
        if kept_head and j < len(start_names):
            out[name] = {"start_target": start_names[j], "chosen_by": "kept head"}
        elif name in start_names:
            out[name] = {"start_target": name, "chosen_by": "same name"}
        elif len(start_names) == 1:
            out[name] = {"start_target": start_names[0], "chosen_by": "only target"}
        else:
            best, best_r = 0, -1.0
            for k in range(p.shape[1]):
                ok = np.isfinite(y[:, j]) & np.isfinite(p[:, k])
                if ok.sum() < 3 or np.std(y[ok, j]) == 0 or np.std(p[ok, k]) == 0:
                    continue
                r = abs(float(np.corrcoef(y[ok, j], p[ok, k])[0, 1]))
                if r > best_r:
                    best, best_r = k, r
            out[name] = {
                "start_target": start_names[best],
                "chosen_by": "best |r| on the training part",
            }
    return out


def baseline_metrics(
    targets: dict[str, np.ndarray],
    start: dict[str, np.ndarray] | None,
    task_type: str,
    names: list[str],
) -> dict[str, dict[str, dict[str, float]]]:
    """``targets``: per part (``train`` needed) the (n, T) labels; ``start``: per part the
    starting model's (n, T) prediction in its units (column j: what target j's ``start``
    baselines use, see :func:`start_columns`), or None (task types differ).
    -> ``{part: {baseline: metrics}}`` for every part but ``train`` that has rows."""
    train = np.asarray(targets["train"], dtype=np.float64)
    mean = np.nanmean(train, axis=0)
    linear = []
    if start is not None:
        p = np.asarray(start["train"], dtype=np.float64)
        linear = [_fit_linear(p[:, j], train[:, j], task_type) for j in range(train.shape[1])]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for part, y in targets.items():
        if part == "train" or len(y) == 0:
            continue
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        found = {"mean": compute_metrics(y, np.tile(mean, (len(y), 1)), task_type, names)}
        if start is not None:
            p = np.asarray(start[part], dtype=np.float64)
            found["start"] = compute_metrics(y, p, task_type, names)
            if all(f is not None for f in linear):
                pred = np.column_stack([f(p[:, j]) for j, f in enumerate(linear)])
                found["start_linear"] = compute_metrics(y, pred, task_type, names)
        out[part] = found
    return out


def _better(model: float, base: float, higher: bool) -> bool:
    if not np.isfinite(model):
        return False
    if not np.isfinite(base):
        return True
    return model > base if higher else model < base


_NAMES = {
    "mean": "the mean predictor",
    "start": "the starting model as it is",
    "start_linear": "a linear model on the starting model's prediction",
}
_PARTS = {"val": "validation", "test": "test"}


def verdict(
    metrics: dict[str, Any], baselines: dict[str, dict[str, dict[str, float]]], task_type: str
) -> dict[str, Any]:
    """Whether the fine-tuned ensemble (``metrics[part]["ensemble"]``) beats each baseline on
    validation (test when there is no validation part). ``beats_*``: None when that baseline
    was not computed (``beats_mean`` None: no held-out part at all); ``beats_mean_on_test``
    (when both parts exist): the same against the mean predictor on test, told in the
    message when False."""
    key = "roc_auc" if task_type == "classification" else "rmse"
    higher = key == "roc_auc"
    part = next((p for p in ("val", "test") if p in baselines), None)
    result: dict[str, Any] = {f"beats_{b}": None for b in BASELINES}
    result.update(metric=key, part=part)
    if part is None:
        result["message"] = (
            "no held-out data: the fine-tuned model was NOT checked against baselines"
        )
        return result
    model = float(metrics[part]["ensemble"].get(key, float("nan")))
    lost: list[str] = []
    for name in BASELINES:
        if name not in baselines[part]:
            continue
        base = float(baselines[part][name].get(key, float("nan")))
        beats = _better(model, base, higher)
        result[f"beats_{name}"] = beats
        if not beats:
            where = f" on {_PARTS.get(part, part)}" if not lost else ""
            lost.append(f"{_NAMES[name]}{where} ({key.upper()} {model:.3g} vs {base:.3g})")
    if lost:
        advice = "do not use it" if not result["beats_mean"] else "prefer the better baseline"
        result["message"] = f"the fine-tuned model does NOT beat {', nor '.join(lost)}: {advice}"
    else:
        where = _PARTS.get(part, part)
        shown = ", ".join(
            f"{n} {baselines[part][n].get(key, float('nan')):.3g}" for n in baselines[part]
        )
        result["message"] = (
            f"the fine-tuned model beats all baselines on {where} "
            f"({key.upper()} {model:.3g}; {shown})"
        )
    if part == "val" and "test" in baselines and "mean" in baselines["test"]:
        # the decision stays on validation; a loss on test is said too
        on_test = float(metrics["test"]["ensemble"].get(key, float("nan")))
        mean_test = float(baselines["test"]["mean"].get(key, float("nan")))
        result["beats_mean_on_test"] = _better(on_test, mean_test, higher)
        if not result["beats_mean_on_test"]:
            result["message"] += (
                f" (on test it does NOT beat the mean predictor: {key.upper()} "
                f"{on_test:.3g} vs {mean_test:.3g})"
            )
    return result


def losing(result: dict[str, Any]) -> bool:
    """True when the verdict found a baseline the fine-tuned model does not beat."""
    return any(result.get(f"beats_{b}") is False for b in BASELINES)


__all__ = ["BASELINES", "baseline_metrics", "losing", "start_columns", "verdict"]
