"""The rule that decides between the validation-split and the cross-validated calibration of
``admet_regression`` (``benchmarks.admet_panel.CV_SHIP_RULE``): counted over the endpoints both
calibrate, by the 90 % Clopper–Pearson criterion, the cross-validated one ships only when more
endpoints hold; a tie keeps the shipped one."""

from __future__ import annotations

from benchmarks.admet_panel import cv_decision


def _report(coverages: dict[str, tuple[float, int] | None]) -> dict:
    """A calibration report with these 90 % test coverages (None: not calibrated)."""
    test = {
        e: {"not_calibrated": "too few"}
        if c is None
        else {"n": c[1], "levels": {"0.9": {"coverage": c[0], "n": c[1], "mean_width": 1.0}}}
        for e, c in coverages.items()
    }
    return {"test": test}


def test_more_endpoints_holding_ships_cv_and_a_tie_keeps_validation() -> None:
    # n 500: 0.90 and 0.91 hold, 0.86 and 0.94 miss (95 % CP interval excludes 0.9)
    validation = _report({"a": (0.90, 500), "b": (0.86, 500), "c": (0.94, 500), "h": None})
    better = _report({"a": (0.91, 500), "b": (0.90, 500), "c": (0.94, 500), "h": (0.9, 100)})
    same = _report({"a": (0.86, 500), "b": (0.90, 500), "c": (0.94, 500), "h": (0.9, 100)})
    endpoints = ["a", "b", "c", "h"]
    won = cv_decision(validation, better, endpoints)
    assert won["endpoints"] == ["a", "b", "c"] and won["only_cv"] == ["h"]
    assert won["hold_validation"] == ["a"] and won["hold_cv"] == ["a", "b"]
    assert won["ship_cv"] is True
    tie = cv_decision(validation, same, endpoints)
    assert tie["hold_validation"] == ["a"] and tie["hold_cv"] == ["b"]
    assert tie["ship_cv"] is False  # one each: the validation-split calibration stays
