"""The fine-tune baselines (mean predictor, starting model, linear model on its prediction)
and their verdict, on arrays whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from molprop.transfer.baselines import baseline_metrics, losing, verdict


def test_regression_baselines_have_the_known_errors() -> None:
    rng = np.random.default_rng(0)
    p = {k: rng.normal(size=n) for k, n in (("train", 50), ("val", 20), ("test", 10))}
    y = {k: (1.0 + 2.0 * v)[:, None] for k, v in p.items()}  # exactly linear in p
    found = baseline_metrics(y, {k: v[:, None] for k, v in p.items()}, "regression", ["y"])
    assert set(found) == {"val", "test"}
    mean = y["train"].mean()
    expected = np.sqrt(np.mean((y["val"][:, 0] - mean) ** 2))
    assert found["val"]["mean"]["rmse"] == pytest.approx(expected)
    assert found["val"]["start"]["rmse"] == pytest.approx(
        np.sqrt(np.mean((y["val"][:, 0] - p["val"]) ** 2))
    )
    assert found["val"]["start_linear"]["rmse"] == pytest.approx(0.0, abs=1e-9)
    assert "start" not in baseline_metrics(y, None, "regression", ["y"])["val"]


def test_classification_baselines() -> None:
    rng = np.random.default_rng(1)
    p = {k: rng.uniform(size=n) for k, n in (("train", 200), ("val", 100))}
    y = {k: (v > 0.5).astype(float)[:, None] for k, v in p.items()}
    columns = {k: v[:, None] for k, v in p.items()}
    found = baseline_metrics(y, columns, "classification", ["active"])["val"]
    assert found["mean"]["roc_auc"] == pytest.approx(0.5)
    assert found["start"]["roc_auc"] == pytest.approx(1.0)
    assert found["start_linear"]["roc_auc"] == pytest.approx(1.0)


def test_verdict_says_plainly_when_the_model_loses() -> None:
    baselines = {"val": {"mean": {"rmse": 1.10}, "start": {"rmse": 1.5}}}
    lost = verdict({"val": {"ensemble": {"rmse": 1.20}}}, baselines, "regression")
    assert lost["beats_mean"] is False and lost["beats_start"] is True
    assert lost["beats_start_linear"] is None and losing(lost)
    assert lost["message"] == (
        "the fine-tuned model does NOT beat the mean predictor on validation "
        "(RMSE 1.2 vs 1.1): do not use it"
    )
    won = verdict({"val": {"ensemble": {"rmse": 0.9}}}, baselines, "regression")
    assert won["beats_mean"] and won["beats_start"] and not losing(won)
    assert "beats all baselines on validation" in won["message"]
    auc = verdict(
        {"val": {"ensemble": {"roc_auc": 0.7}}},
        {"val": {"mean": {"roc_auc": 0.5}, "start": {"roc_auc": 0.8}}},
        "classification",
    )
    assert (auc["metric"], auc["beats_mean"], auc["beats_start"]) == ("roc_auc", True, False)
    assert "prefer the better baseline" in auc["message"]
    both = {**baselines, "test": {"mean": {"rmse": 1.3}}}
    mixed = verdict(
        {"val": {"ensemble": {"rmse": 0.9}}, "test": {"ensemble": {"rmse": 1.4}}},
        both,
        "regression",
    )
    assert mixed["beats_mean"] and mixed["beats_mean_on_test"] is False
    assert mixed["message"].endswith(
        "(on test it does NOT beat the mean predictor: RMSE 1.4 vs 1.3)"
    )
    none = verdict({}, {}, "regression")
    assert none["beats_mean"] is None and "NOT checked" in none["message"]


def test_cli_line_warns_on_any_loss() -> None:
    from molprop.cli.finetune import verdict_line

    baselines = {"val": {"mean": {"rmse": 1.1}}, "test": {"mean": {"rmse": 1.3}}}
    won = verdict(
        {"val": {"ensemble": {"rmse": 0.9}}, "test": {"ensemble": {"rmse": 1.0}}},
        baselines,
        "regression",
    )
    assert verdict_line({"verdict": won}) == f"baselines: {won['message']}"
    on_test = verdict(
        {"val": {"ensemble": {"rmse": 0.9}}, "test": {"ensemble": {"rmse": 1.4}}},
        baselines,
        "regression",
    )
    assert verdict_line({"verdict": on_test}).startswith("WARNING: the fine-tuned model beats")
    assert verdict_line({}).startswith("WARNING: no baselines")


def test_each_target_is_compared_with_the_starting_target_that_matches_it() -> None:
    """A multitask start: the kept head's own output, else the same name, else its only
    target, else the best-correlated one on the training part (anti-correlation counts);
    each fine-tuned target's ``start`` baseline uses its own column."""
    from molprop.transfer.baselines import start_columns

    rng = np.random.default_rng(2)
    start = rng.normal(size=(80, 3))  # predictions of the starting targets a, b, c
    y = np.column_stack([-2.0 * start[:, 2] + 0.1 * rng.normal(size=80), start[:, 0]])
    chosen = start_columns(["x", "a"], ["a", "b", "c"], y, start)
    assert chosen == {
        "x": {"start_target": "c", "chosen_by": "best |r| on the training part"},
        "a": {"start_target": "a", "chosen_by": "same name"},
    }
    kept = start_columns(["x", "y"], ["a", "b"], y, start[:, :2], kept_head=True)
    assert [c["start_target"] for c in kept.values()] == ["a", "b"]
    assert start_columns(["x"], ["only"], y[:, :1], start[:, :1])["x"]["chosen_by"] == (
        "only target"
    )
    parts = {"train": y, "val": y[:20]}
    columns = {"train": start[:, [2, 0]], "val": start[:20, [2, 0]]}
    found = baseline_metrics(parts, columns, "regression", ["x", "a"])["val"]
    assert found["start"]["rmse/a"] == pytest.approx(0.0, abs=1e-12)  # its own column
    assert found["start_linear"]["rmse/x"] < 0.2 < found["start"]["rmse/x"]  # fitted -2·c
