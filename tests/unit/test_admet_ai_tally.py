"""The results page's tally of the ADMET-AI target: MAE lower is better, AUROC higher; rows
without both numbers do not count; >= 60 % of the shared endpoints is met."""

from __future__ import annotations

import math

from benchmarks.admet_panel import admet_ai_tally


def row(name: str, metric: str, ours: float | None, theirs: float | None) -> dict:
    return {
        "endpoint": name,
        "admet_ai_metric": metric,
        "ours_in_admet_ai_metric": ours,
        "admet_ai_value": theirs,
    }


def test_direction_missing_rows_and_verdict() -> None:
    rows = [
        row("mae_better", "MAE", 0.40, 0.45),
        row("mae_worse", "MAE", 0.50, 0.45),
        row("auroc_better", "AUROC", 0.91, 0.90),
        row("auroc_worse", "AUROC", 0.85, 0.90),
        row("not_reported", "AUROC", 0.99, math.nan),
        row("no_metric", "MAE", None, 0.3),
    ]
    text = admet_ai_tally(rows)
    assert "at least as good on 2 of 4 endpoints" in text and "missed" in text
    assert "mae_better, auroc_better" in text and "worse" not in text.split(":", 2)[2]
    tied = admet_ai_tally([row("a", "MAE", 0.4, 0.4), row("b", "AUROC", 0.9, 0.9)])
    assert "2 of 2" in tied and "met" in tied
