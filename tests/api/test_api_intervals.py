"""``interval`` in the service: a per-row ``{level, low, high}`` for calibrated regression
models, null otherwise with the response saying why; bad levels are 422, never 500."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.artifact.calibration import CALIBRATION_NAME, Calibration
from molprop.inference import Predictor


def _post(client: TestClient, **body):
    return client.post(
        "/v1/predict", json={"model": "solubility", "smiles": ["CCO", "C1CC", "c1ccccc1O"], **body}
    )


def test_default_interval_per_row(client: TestClient, model_dir: Path) -> None:
    r = _post(client)
    assert r.status_code == 200, r.text
    body = r.json()
    assert "split-conformal" in body["calibration"]
    ok, bad, ok2 = body["results"]
    for row in (ok, ok2):
        iv = row["interval"]
        assert iv["level"] == 0.9 and iv["low"] < row["value"] < iv["high"]
    assert bad["status"] == "invalid_input" and bad["interval"] is None
    # the same numbers as the Python API
    frame = Predictor.from_pretrained(model_dir / "solubility").predict(["CCO"], interval=0.9)
    assert ok["interval"]["low"] == pytest.approx(frame["logp_low"][0], rel=1e-4, abs=1e-5)
    assert ok["interval"]["high"] == pytest.approx(frame["logp_high"][0], rel=1e-4, abs=1e-5)


def test_interval_level_and_null(client: TestClient) -> None:
    narrow = _post(client, interval=0.5).json()["results"][0]["interval"]
    wide = _post(client, interval=0.9).json()["results"][0]["interval"]
    assert narrow["level"] == 0.5 and wide["high"] - wide["low"] > narrow["high"] - narrow["low"]
    off = _post(client, interval=None).json()
    assert [row["interval"] for row in off["results"]] == [None, None, None]


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.2, "high", [0.9], True])
def test_bad_levels_are_422(client: TestClient, level) -> None:
    r = _post(client, interval=level)
    assert r.status_code == 422, r.text
    assert "interval" in str(r.json()["detail"])


def test_level_above_what_the_calibration_serves_is_422(client: TestClient, model_dir) -> None:
    top = Calibration.load(model_dir / "solubility").max_level()  # 30 validation molecules
    assert top < 0.99
    r = _post(client, interval=0.99)
    assert r.status_code == 422
    assert "calibration" in r.json()["detail"] and "highest level" in r.json()["detail"]


def test_classifier_has_no_interval_and_says_platt(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"model": "bbb", "smiles": ["CCO"]})
    assert r.status_code == 200
    body = r.json()
    assert body["results"][0]["interval"] is None and "Platt" in body["calibration"]
    models = {m["name"]: m for m in client.get("/v1/models").json()}
    assert "Platt" in models["bbb"]["calibration"]
    assert "split-conformal" in models["solubility"]["calibration"]


def test_uncalibrated_model_says_so(tmp_path: Path, model_dir: Path) -> None:
    """An artifact written before calibration existed is served: no interval, and the
    response and the model list say it is not calibrated."""
    shutil.copytree(model_dir / "solubility", tmp_path / "old")
    (tmp_path / "old" / CALIBRATION_NAME).unlink()
    with TestClient(create_app(Settings(model_dir=tmp_path))) as c:
        r = c.post("/v1/predict", json={"model": "old", "smiles": ["CCO"], "interval": 0.8})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["results"][0]["interval"] is None and body["results"][0]["status"] == "ok"
        assert body["calibration"].startswith("not calibrated")
        assert c.get("/v1/models").json()[0]["calibration"].startswith("not calibrated")


def test_served_models_build_their_intervals_at_load(model_dir: Path) -> None:
    """The crepes regressors are built when the service loads a model (the first one imports
    crepes and scipy, ~2 s), not by the first request that asks for an interval."""
    from api.registry import load_model
    from molprop.artifact.calibration import ConformalTarget

    served = load_model(model_dir / "solubility")
    targets = [
        t for t in served.predictor.calibration.targets.values() if isinstance(t, ConformalTarget)
    ]
    assert targets and all("regressor" in t._cache for t in targets)
