"""The model card table is generated from metrics.json numbers."""

from __future__ import annotations

from molprop.artifact.card import metrics_table


def test_metrics_table_has_members_and_ensemble() -> None:
    test = {
        "ensemble": {"rmse": 0.8123, "mae": 0.6, "r2": 0.81, "n": 113},
        "members": [
            {"rmse": 0.9, "mae": 0.7, "r2": 0.7, "n": 113},
            {"rmse": 0.95, "mae": 0.71, "r2": 0.69, "n": 113},
        ],
    }
    lines = metrics_table(test, "regression")
    assert lines[0] == "| model | rmse | mae | r2 | n |"
    assert lines[2].startswith("| member 0 | 0.900 |") and lines[3].startswith("| member 1 | 0.950")
    assert lines[-1] == "| **ensemble (mean)** | 0.812 | 0.600 | 0.810 | 113 |"
    cls = metrics_table(
        {"ensemble": {"roc_auc": 0.9, "mcc": 0.5, "accuracy": 0.8, "n": 5}}, "classification"
    )
    assert "roc_auc" in cls[0] and "0.900" in cls[-1]
