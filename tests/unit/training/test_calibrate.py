"""Calibration is fitted on the validation split only (never a test row), at train time and
for the shipped models; Platt scaling fixes planted over-confidence; ``molprop calibrate``
writes a new version and leaves the original artifact untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import molprop.training.calibrate as calibrate_module
from molprop.artifact.calibration import CALIBRATION_NAME, Calibration
from molprop.artifact.resolve import shipped_models_dir
from molprop.cli.main import main
from molprop.models.config import TrainConfig
from molprop.training.calibration_fit import fit_platt
from molprop.training.metrics import brier, ece

REPO = Path(__file__).resolve().parents[3]
ESOL = REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"


@pytest.fixture
def spy(monkeypatch):
    """Records the labels and predictions that reach the fitting function."""
    calls: list[dict] = []
    real = calibrate_module.fit_calibration

    def recording(task_type, names, targets, mean, std, in_domain, **kw):
        calls.append({"targets": np.array(targets), "mean": np.array(mean)})
        return real(task_type, names, targets, mean, std, in_domain, **kw)

    monkeypatch.setattr(calibrate_module, "fit_calibration", recording)
    return calls


def _labels(directory: Path, frame: pd.DataFrame, target: str) -> dict[str, np.ndarray]:
    split = pd.read_csv(directory / "split.csv", dtype={"split": str})
    y = frame[target].astype(float).to_numpy()
    return {
        p: np.sort(y[split.loc[split["split"] == p, "row"].to_numpy()]) for p in ("val", "test")
    }


def test_training_calibrates_on_validation_rows_only(tmp_path: Path, spy) -> None:
    from molprop.training.train import TrainRequest, run_train

    frame = pd.read_csv(ESOL, dtype=str, keep_default_na=False).head(300)
    out = tmp_path / "m"
    run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=["logp"],
            out=out,
            model={
                "hidden_dim": 16,
                "heads": 2,
                "layers": "MSP",
                "num_seeds": 2,
                "head_hidden": 16,
            },
            train=TrainConfig(epochs=1, batch_size=64, ensemble_size=2),
            progress=False,
        )
    )
    labels = _labels(out, frame, "logp")
    assert len(spy) == 1
    got = np.sort(spy[0]["targets"][:, 0])
    assert np.array_equal(got, labels["val"])  # exactly the validation labels...
    assert not np.isin(labels["test"], got).all()  # ...not the test ones
    stored = Calibration.load(out)
    assert stored.n == len(labels["val"]) == 30
    metrics = json.loads((out / "metrics.json").read_text())["calibration"]
    assert metrics["n"] == 30 and metrics["test"]["logp"]["n"] == len(labels["test"])


def test_shipped_recipe_calibrates_on_validation_rows_only(tmp_path: Path, spy) -> None:
    """The ``calibrate`` stage of ``make pretrained`` on a copy of the shipped solubility model:
    the fitting function sees the validation rows of its split.csv; moving 10 test rows into
    the validation split changes the calibration set by exactly those rows."""
    from molprop.pretrained_recipes import RECIPES, calibrate, labelled_table

    recipe = RECIPES["solubility"]
    out = tmp_path / "solubility"
    shutil.copytree(shipped_models_dir() / "solubility", out)
    frame = labelled_table(recipe)  # the rows split.csv indexes
    calibrate(recipe, out)
    labels = _labels(out, frame, recipe.data_column)
    assert np.array_equal(np.sort(spy[-1]["targets"][:, 0]), labels["val"])
    assert Calibration.load(out).n == len(labels["val"]) == 614
    split = pd.read_csv(out / "split.csv", dtype={"split": str})
    moved = split.index[split["split"] == "test"][:10]
    split.loc[moved, "split"] = "val"
    split.to_csv(out / "split.csv", index=False)
    calibrate(recipe, out)
    assert Calibration.load(out).n == 624
    new = np.sort(spy[-1]["targets"][:, 0])
    assert np.array_equal(new, _labels(out, frame, recipe.data_column)["val"])
    assert json.loads((out / "metrics.json").read_text())["calibration"]["test"]["logS"]["n"] == 620


def test_platt_lowers_ece_of_planted_miscalibration() -> None:
    """The shipped BBBP model's validation / test probabilities made under-confident
    (logit x 0.25, pulled towards 0.5): Platt scaling fitted on the validation split lowers the test ECE and Brier
    score (deterministic: real model, fixed split)."""
    from molprop.inference import Predictor
    from molprop.pretrained_recipes import RECIPES, split_sets
    from molprop.training.calibrate import raw_predictions

    directory = shipped_models_dir() / "bbb_penetration"
    val, test = split_sets(RECIPES["bbb_penetration"], directory)
    predictor = Predictor.from_pretrained(directory)

    def underconfident(s):
        p = np.clip(raw_predictions(predictor, s).mean[:, 0], 1e-6, 1 - 1e-6)
        return 1 / (1 + np.exp(-0.25 * np.log(p / (1 - p))))

    pv, pt = underconfident(val), underconfident(test)
    platt = fit_platt(val.targets[:, 0], pv)
    yt = test.targets[:, 0]
    before, after = ece(yt, pt), ece(yt, platt.apply(pt))
    assert after < 0.5 * before, (before, after)
    assert brier(yt, platt.apply(pt)) < brier(yt, pt)
    assert 3 < platt.a < 5  # undoes the x 0.25


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_cli_calibrate_writes_a_new_version(tmp_path: Path, capsys) -> None:
    src = tmp_path / "model"
    shutil.copytree(shipped_models_dir() / "solubility", src)
    before = _digest(src)
    data = tmp_path / "assay.csv"
    frame = pd.read_csv(ESOL)
    frame.iloc[:200].rename(columns={"logp": "measured"}).to_csv(data, index=False)
    held_out = tmp_path / "held_out.csv"
    frame.iloc[200:400].rename(columns={"logp": "measured"}).to_csv(held_out, index=False)
    out = tmp_path / "recalibrated"
    argv = ["calibrate", "--model", str(src), "--data", str(data), "--target-column", "measured"]
    assert main([*argv, "--out", str(out), "--test", str(held_out)]) == 0
    assert _digest(src) == before  # the original is untouched
    config = json.loads((out / "config.json").read_text())
    assert config["version"] == "2"
    assert Calibration.load(out).n == 200
    assert Calibration.load(out).fitted_on.startswith("assay.csv, 200 labelled molecules")
    for w in (src / "members").rglob("*.safetensors"):  # weights copied, not changed
        assert (out / w.relative_to(src)).read_bytes() == w.read_bytes()
    report = json.loads((out / "metrics.json").read_text())["calibration"]
    assert report["test"]["logS"]["n"] == 200
    assert "Version 2" in (out / "card.md").read_text()
    assert "assay.csv" in (out / "card.md").read_text()
    assert Calibration.load(out).targets["logS"].difficulty == "std+novelty"  # the default
    # in place: version 3, the previous calibration kept; --difficulty std: the std rule
    assert main([*argv[:2], str(out), *argv[3:], "--difficulty", "std"]) == 0
    assert json.loads((out / "config.json").read_text())["version"] == "3"
    assert (out / "calibration.v2.json").exists() and (out / CALIBRATION_NAME).exists()
    assert Calibration.load(out).targets["logS"].difficulty == "std"
    # a model name without --out is refused (a shipped model is never changed in place)
    capsys.readouterr()
    assert main(["calibrate", "--model", "solubility", "--data", str(ESOL)]) == 2
    assert "--out" in capsys.readouterr().err
    # an --out that is not empty is refused
    assert main([*argv, "--out", str(out)]) == 2
