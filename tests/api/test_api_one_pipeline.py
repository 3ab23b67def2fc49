"""The service runs the library's pipeline: ``POST /v1/predict`` (one model, and a panel) gives
exactly what ``Predictor.predict`` gives for the same molecules (value, spread, percentile,
domain, similarity, interval, status), and its pre-queue screen is the pipeline's work limits
(:class:`molprop.inference.screen.WorkLimits`) named as the service's settings."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.inference import Predictor
from molprop.inference.screen import SERVICE_NAMES, WorkLimits

SHIPPED = Path(__file__).resolve().parents[2] / "pretrained"
SMILES = [
    "CCO",
    "c1ccccc1O",
    "[Na+].[O-]C(=O)c1ccccc1",  # standardised: benzoic acid
    "not a smiles",
    "[Na+].[Cl-]",
    "B1OC(C)(C)C(C)(C)O1",  # pinacolborane: far from the training set
    "C" * 40,  # refused before the model: 40 heavy atoms
    "C" * 130,  # refused before the model: too long
]
MAX_HEAVY_ATOMS, MAX_LENGTH = 30, 120


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("one-pipeline") / "models"
    root.mkdir()
    for name in ("solubility", "lipophilicity"):
        (root / name).symlink_to(SHIPPED / name, target_is_directory=True)
    settings = Settings(
        model_dir=root,
        max_batch=20,
        max_smiles_length=MAX_LENGTH,
        max_heavy_atoms=MAX_HEAVY_ATOMS,
        data_dir=root.parent / "data",
        job_workers=0,
    )
    with TestClient(create_app(settings)) as c:
        yield c


def _number(value: object) -> float | None:
    if value is None or value is pd.NA:
        return None
    value = float(value)  # type: ignore[arg-type]
    return value if math.isfinite(value) else None


def _expected(model: str, target: str) -> list[dict]:
    """What the Predictor says for each row the service's work limits pass (predicted together,
    as the service does: a float32 value depends in its 7th digit on the batch it is in); the
    refused rows: the work limits' reason."""
    limits = WorkLimits(MAX_LENGTH, MAX_HEAVY_ATOMS, SERVICE_NAMES)
    refusals = [limits.refusal(smi) for smi in SMILES]
    passed = [smi for smi, refusal in zip(SMILES, refusals) if refusal is None]
    records = iter(Predictor.from_pretrained(model).predict(passed).to_dict("records"))
    rows = []
    for refusal in refusals:
        if refusal is not None:
            rows.append({"status": "invalid_input", "error": refusal})
            continue
        record = next(records)
        ok = record["status"] == "ok"
        rows.append(
            {
                "status": record["status"],
                "error": record["error"] or None,
                "value": _number(record[target]) if ok else None,
                "std": _number(record[f"{target}_std"]) if ok else None,
                "low": _number(record[f"{target}_low"]) if ok else None,
                "high": _number(record[f"{target}_high"]) if ok else None,
                "percentile": _number(record[f"{target}_percentile"]) if ok else None,
                "in_domain": None if not ok else bool(record["in_domain"]),
                "similarity": _number(record["similarity"]) if ok else None,
            }
        )
    return rows


def test_predict_is_the_predictors_pipeline(client: TestClient) -> None:
    response = client.post("/v1/predict", json={"model": "solubility", "smiles": SMILES})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    expected = _expected("solubility", "logS")
    assert [r["status"] for r in results] == [
        "ok",
        "ok",
        "ok",
        "invalid_input",
        "unsupported",
        "ok",
        "invalid_input",
        "invalid_input",
    ]
    assert results[5]["in_domain"] is False and results[0]["in_domain"] is True
    assert "MOLPROP_MAX_HEAVY_ATOMS" in results[6]["error"]
    assert "MOLPROP_MAX_SMILES_LENGTH" in results[7]["error"]
    for got, want in zip(results, expected, strict=True):
        assert got["status"] == want["status"] and got["error"] == want["error"]
        if want["status"] != "ok":
            assert got["value"] is None and got["in_domain"] is None
            continue
        interval = got["interval"]
        assert (got["value"], got["uncertainty"], got["percentile"]) == (
            want["value"],
            want["std"],
            want["percentile"],
        )
        assert (got["in_domain"], got["similarity"]) == (want["in_domain"], want["similarity"])
        assert (interval["low"], interval["high"]) == (want["low"], want["high"])


def test_a_panel_request_is_each_models_pipeline(client: TestClient) -> None:
    response = client.post(
        "/v1/predict", json={"models": ["solubility", "lipophilicity"], "smiles": SMILES}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    for k, (model, target) in enumerate([("solubility", "logS"), ("lipophilicity", "logD_7.4")]):
        for row, want in zip(results, _expected(model, target), strict=True):
            got = row["endpoints"][k]
            assert (got["target"], got["status"]) == (target, want["status"])
            if want["status"] != "ok":
                continue
            for field in ("value", "std", "low", "high", "percentile", "similarity"):
                assert got[field] == want[field], (model, field)
            assert got["in_domain"] == want["in_domain"]
