"""The rule that decides between the validation-split and the cross-validated calibration of
``admet_regression`` (``benchmarks.admet_panel.CV_SHIP_RULE``): counted over the endpoints both
calibrate, by the 90 % Clopper–Pearson criterion, the cross-validated one ships only when more
endpoints hold; a tie keeps the shipped one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import benchmarks.admet_panel as panel
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


def _copy(path: Path, report: dict, weights: bytes = b"w") -> Path:
    """A model directory with this calibration report, two targets and member weights."""
    (path / "members" / "0").mkdir(parents=True)
    (path / "members" / "0" / "model.safetensors").write_bytes(weights)
    test = {"ensemble": {"rmse/a": 1.5, "rmse/b": 1.0}}
    (path / "metrics.json").write_text(json.dumps({"calibration": report, "test": test}))
    (path / "config.json").write_text(json.dumps({"task": {"target_names": ["a", "b"]}}))
    residuals = {"targets": {"a": {"residuals": [1.0, -1.0]}, "b": {"residuals": [2.0]}}}
    (path / "calibration.json").write_text(json.dumps(residuals))
    return path


def test_the_page_section_shows_both_calibrations_and_which_one_ships(tmp_path, monkeypatch):
    """Both reports are kept only for two copies of one model (same weights, the second
    cross-validated); the section gives each endpoint's coverage under both, the rule's pick,
    and the calibration the shipped model really has."""
    monkeypatch.setattr(panel, "CALIBRATION_CHOICE", tmp_path / "choice.json")
    val = {
        "fitted_on": "validation split",
        "test": _report({"a": (0.86, 500), "b": (0.9, 500)})["test"],
    }
    cv = {
        "fitted_on": "5-fold scaffold cross-validation of train+val",
        "cross_validation": {"folds": 5},
        "test": _report({"a": (0.90, 500), "b": (0.91, 500)})["test"],
    }
    val_dir, cv_dir = _copy(tmp_path / "v", val), _copy(tmp_path / "c", cv)
    with pytest.raises(RuntimeError, match="not calibrated by cross-validation"):
        panel.record_calibration_choice(val_dir, val_dir)
    with pytest.raises(RuntimeError, match="weights differ"):
        panel.record_calibration_choice(val_dir, _copy(tmp_path / "other", cv, b"x"))
    panel.record_calibration_choice(val_dir, cv_dir)
    models = tmp_path / "models"
    models.mkdir()
    shutil.copytree(val_dir, models / "admet_regression")  # the validation one still shipped
    text = "\n".join(panel.calibration_choice_section(models, ["a", "b"]))
    assert (
        "| a | 0.860 [0.826, 0.889], 1.000: missed | 0.900 [0.870, 0.925], 1.000: holds "
        "| 1.50, 1.50 |" in text  # test RMSE 1.5 over the calibration residuals' RMSE 1
    )
    assert (
        "| b | 0.900 [0.870, 0.925], 1.000: holds | 0.910 [0.881, 0.934], 1.000: holds | 0.50, 0.50 |"
        in text
    )
    assert "validation split 1 of 2, cross-validated 2 of 2" in text
    assert "picks the **cross-validated** calibration" in text
    assert "ships the validation-split one." in text
    shutil.rmtree(models / "admet_regression")
    shutil.copytree(cv_dir, models / "admet_regression")
    assert "ships the cross-validated one." in "\n".join(
        panel.calibration_choice_section(models, ["a", "b"])
    )


def test_the_shipped_admet_regression_has_the_calibration_the_rule_picks() -> None:
    """Both measured reports are kept; the rule applied to them names the calibration that
    ``pretrained/admet_regression`` ships and that its recipe (``make pretrained``) rebuilds,
    and the shipped test coverage is the kept report's."""
    from molprop.pretrained_admet import groups

    reports = json.loads(panel.CALIBRATION_CHOICE.read_text())
    models = panel.REPO / "pretrained"
    decision = cv_decision(reports["validation"], reports["cv"], panel.regression_endpoints(models))
    picked = "cv" if decision["ship_cv"] else "validation"
    shipped = json.loads((models / "admet_regression" / "metrics.json").read_text())
    assert shipped["calibration"]["fitted_on"] == reports[picked]["fitted_on"]
    assert shipped["calibration"]["test"] == reports[picked]["test"]
    assert groups()["admet_regression"].calibration == picked


def test_the_novelty_report_is_kept_only_for_the_same_model_and_folds(tmp_path, monkeypatch):
    """The novelty-scaled report joins the kept ones only for a copy with the shipped
    cross-validated model's weights, fitted on the same folds, with the novelty-scaled
    difficulty; the page then shows both difficulties and what ships."""
    monkeypatch.setattr(panel, "CALIBRATION_CHOICE", tmp_path / "choice.json")
    fitted = "5-fold scaffold cross-validation of train+val"
    cv = {"fitted_on": fitted, "cross_validation": {}, "test": _report({"a": (0.86, 500)})["test"]}
    nov = {"fitted_on": fitted, "cross_validation": {}, "test": _report({"a": (0.9, 500)})["test"]}
    panel.CALIBRATION_CHOICE.write_text(json.dumps({"cv": cv, "calibration_rmse": {}}))
    cv_dir, nov_dir = _copy(tmp_path / "c", cv), _copy(tmp_path / "n", nov)
    with pytest.raises(RuntimeError, match="novelty-scaled difficulty"):
        panel.record_novelty_choice(cv_dir, nov_dir)  # its calibration.json names none
    scaled = {"difficulty": "std+novelty", "beta": 0.5, "residuals": [1.0]}
    (nov_dir / "calibration.json").write_text(json.dumps({"targets": {"a": scaled}}))
    with pytest.raises(RuntimeError, match="weights differ"):
        panel.record_novelty_choice(_copy(tmp_path / "x", cv, b"x"), nov_dir)
    other = _copy(tmp_path / "o", {**nov, "fitted_on": "validation split"})
    (other / "calibration.json").write_text(json.dumps({"targets": {"a": scaled}}))
    with pytest.raises(RuntimeError, match="same folds|kept cross-validation"):
        panel.record_novelty_choice(cv_dir, other)
    panel.record_novelty_choice(cv_dir, nov_dir)
    models = tmp_path / "models"
    shutil.copytree(cv_dir, models / "admet_regression")
    text = "\n".join(panel.novelty_choice_section(models, ["a"]))
    assert "| a | 0.860 [0.826, 0.889], 1.000: missed | 0.900 [0.870, 0.925], 1.000: holds" in text
    assert "std 0 of 1, novelty-scaled 1 of 1" in text
    assert "keeps the **novelty-scaled** difficulty; `admet_regression` ships the std one." in text


def test_the_shipped_admet_regression_has_the_difficulty_the_novelty_rule_picks() -> None:
    """The rule between the std and the novelty-scaled cross-validated calibration, applied
    to the kept reports, names the difficulty of every target ``pretrained/admet_regression``
    ships and the one its recipe rebuilds."""
    from molprop.pretrained_admet import groups

    reports = json.loads(panel.CALIBRATION_CHOICE.read_text())
    models = panel.REPO / "pretrained"
    decision = cv_decision(reports["cv"], reports["cv_novelty"], panel.regression_endpoints(models))
    picked = "std+novelty" if decision["ship_cv"] else "std"
    stored = json.loads((models / "admet_regression" / "calibration.json").read_text())
    assert {t.get("difficulty", "std") for t in stored["targets"].values()} == {picked}
    assert groups()["admet_regression"].cv_difficulty == picked
