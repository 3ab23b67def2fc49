"""Hostile values the service must answer without a 500: interval levels so small that
``1 - level`` rounds to 1 (the conformal quantile index ran past the scores), and model
directories with broken artifacts next to good ones (skipped with the reason logged, the good
ones served)."""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.artifact.calibration import Calibration
from molprop.inference import Predictor

TINY_LEVELS = [1e-20, 5e-324, 1e-300]


@pytest.mark.parametrize("level", TINY_LEVELS)
def test_tiny_interval_level_is_served(client: TestClient, level: float) -> None:
    body = {"model": "solubility", "smiles": ["CCO", "C1CC", "c1ccccc1O"], "interval": level}
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 200, r.text
    ok, bad, ok2 = r.json()["results"]
    assert bad["status"] == "invalid_input" and bad["interval"] is None
    for row in (ok, ok2):
        iv = row["interval"]
        assert iv["level"] == level
        assert math.isfinite(iv["low"]) and math.isfinite(iv["high"])
        assert iv["low"] <= row["value"] <= iv["high"]


def test_tiny_level_is_the_smallest_conformal_interval(model_dir: Path) -> None:
    """Every level at or below 1 / (n + 1) gets the bins' smallest score: 1e-20 gives exactly
    the interval of a level just below 1 / (n + 1), which crepes computes without trouble."""
    predictor = Predictor.from_pretrained(model_dir / "solubility")
    n = predictor.calibration.n
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O"]
    name = predictor.target_names[0]
    low, high = f"{name}_low", f"{name}_high"
    tiny = predictor.predict(smiles, interval=1e-20)
    small = predictor.predict(smiles, interval=0.9 / (n + 1))
    assert tiny[low].tolist() == small[low].tolist()
    assert tiny[high].tolist() == small[high].tolist()
    assert (tiny[low] <= tiny[name]).all() and (tiny[name] <= tiny[high]).all()
    wide = predictor.predict(smiles, interval=0.9)
    assert ((wide[high] - wide[low]) > (tiny[high] - tiny[low])).all()


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.5])
def test_level_outside_zero_one_is_422(client: TestClient, level: float) -> None:
    body = {"model": "solubility", "smiles": ["CCO"], "interval": level}
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 422, r.text
    assert "interval" in r.text


def _break(root: Path, good: Path, name: str, how) -> Path:
    target = root / name
    shutil.copytree(good, target)
    how(target)
    return target


def _edit_config(key: str, value):
    def edit(directory: Path) -> None:
        data = json.loads((directory / "config.json").read_text())
        data["model"][key] = value
        (directory / "config.json").write_text(json.dumps(data))

    return edit


def _nan_calibration(directory: Path) -> None:
    data = json.loads((directory / "calibration.json").read_text())
    next(iter(data["targets"].values()))["residuals"][0] = float("nan")
    (directory / "calibration.json").write_text(json.dumps(data))


def _card_link(outside: Path):
    def link(directory: Path) -> None:
        (directory / "card.md").unlink(missing_ok=True)
        (directory / "card.md").symlink_to(outside)

    return link


def test_broken_models_are_skipped_with_reason(model_dir: Path, tmp_path: Path, caplog) -> None:
    good = model_dir / "solubility"
    assert Calibration.load(good) is not None
    root = tmp_path / "models"
    shutil.copytree(good, root / "good")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    _break(root, good, "wide", _edit_config("hidden_dim", 4096))
    _break(root, good, "zero", _edit_config("hidden_dim", 0))
    _break(root, good, "nan_cal", _nan_calibration)
    _break(root, good, "linked_card", _card_link(secret))
    settings = Settings(model_dir=root, data_dir=tmp_path / "data", job_workers=0)
    with caplog.at_level(logging.INFO), TestClient(create_app(settings)) as client:
        models = client.get("/v1/models")
        assert models.status_code == 200, models.text
        names = sorted(m["name"] for m in models.json())
        assert names == ["good"]
        page = client.get("/")
        assert page.status_code == 200
        assert "root:x:0:0" not in page.text
        assert client.get("/v1/models/linked_card").status_code == 404
        r = client.post("/v1/predict", json={"model": "good", "smiles": ["CCO"]})
        assert r.status_code == 200, r.text
    log = caplog.text
    assert "skipping model wide" in log and "shape mismatch" in log
    assert "skipping model zero" in log and "hidden_dim" in log
    assert "skipping model nan_cal" in log and "calibration.json" in log and "nan" in log
    assert "skipping model linked_card" in log and "outside the model directory" in log
