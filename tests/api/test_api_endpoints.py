"""Every endpoint and every error of the service, through TestClient."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.inference import Predictor
from tests.api.conftest import INVALID, VALID


def check_contract(body: dict, smiles: list[str]) -> list[dict]:
    """One result per input, same order; value null exactly when status != ok."""
    results = body["results"]
    assert [r["index"] for r in results] == list(range(len(smiles)))
    assert [r["smiles"] for r in results] == smiles
    for r in results:
        assert r["status"] in ("ok", "invalid_input", "unsupported", "error")
        assert (r["value"] is None) == (r["status"] != "ok"), r
        if r["status"] == "ok":
            assert math.isfinite(r["value"]) and r["error"] is None
        else:
            assert r["error"] and r["in_domain"] is None and r["uncertainty"] is None
    return results


def test_health_lists_models(client: TestClient) -> None:
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "models": ["bbb", "solubility"]}


def test_health_503_without_models(tmp_path) -> None:
    with TestClient(create_app(Settings(model_dir=tmp_path))) as c:
        r = c.get("/health")
    assert r.status_code == 503 and "no model" in r.json()["detail"]


def test_models_list_has_metrics(client: TestClient) -> None:
    models = {m["name"]: m for m in client.get("/v1/models").json()}
    assert set(models) == {"bbb", "solubility"}
    sol = models["solubility"]
    assert sol["task"] == "regression" and sol["unit"] == "log10(mol/L)" and sol["n_members"] == 2
    assert sol["version"] == "1" and sol["test_metrics"]["rmse"] > 0
    assert models["bbb"]["task"] == "classification" and "roc_auc" in models["bbb"]["test_metrics"]


def test_model_card_and_404(client: TestClient) -> None:
    r = client.get("/v1/models/solubility")
    assert r.status_code == 200
    assert "## Test metrics" in r.json()["card"] and "in_domain" in r.json()["card"]
    r = client.get("/v1/models/nope")
    assert (
        r.status_code == 404 and "nope" in r.json()["detail"] and "solubility" in r.json()["detail"]
    )


def test_predict_matches_predictor_and_keeps_order(client: TestClient, model_dir) -> None:
    smiles = [VALID[0], INVALID[0], VALID[1], INVALID[1], VALID[2]]
    ids = ["a", "b", "c", "d", "e"]
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": smiles, "ids": ids})
    assert r.status_code == 200
    body = r.json()
    assert (
        body["model"] == "solubility" and body["unit"] == "log10(mol/L)" and body["version"] == "1"
    )
    results = check_contract(body, smiles)
    assert [x["id"] for x in results] == ids
    assert [x["status"] for x in results] == ["ok", "invalid_input", "ok", "invalid_input", "ok"]
    expected = Predictor.from_pretrained(model_dir / "solubility").predict(smiles)
    got = np.array([x["value"] if x["value"] is not None else np.nan for x in results])
    np.testing.assert_allclose(got, expected["logp"].to_numpy(), rtol=1e-5, equal_nan=True)
    for x, std in zip(results, expected["logp_std"]):
        if x["status"] == "ok":
            assert x["uncertainty"] == pytest.approx(std) and isinstance(x["in_domain"], bool)


def test_in_domain_flags_training_molecule_and_outlier(client: TestClient, model_dir) -> None:
    import pandas as pd

    split = pd.read_csv(model_dir / "solubility" / "split.csv")
    train_smiles = split.loc[split["split"] == "train", "smiles"].iloc[0]
    smiles = [train_smiles, "C" * 100, "[Xe]", "[U]"]
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": smiles})
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["ok", "ok", "unsupported", "unsupported"]
    flags = [x["in_domain"] for x in results]
    assert flags == [True, False, None, None]  # no prediction: no domain flag
    # the similarity that decided it: a training molecule is its own nearest neighbour
    similarity = [x["similarity"] for x in results]
    # (a long alkane shares every bit with a training alkane: out of domain by its size)
    assert similarity[0] == pytest.approx(1.0) and 0.0 <= similarity[1] <= 1.0
    assert similarity[2:] == [None, None]


def test_classification_gives_probability(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"model": "bbb", "smiles": VALID})
    results = check_contract(r.json(), VALID)
    assert all(0.0 <= x["value"] <= 1.0 for x in results)
    assert all(x["uncertainty"] is None for x in results)  # single member: no spread


def test_invalid_and_overlong_smiles_are_per_row(client: TestClient, settings: Settings) -> None:
    long = "C" * (settings.max_smiles_length + 1)
    smiles = ["CCO", long, "C1CC", ""]
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": smiles})
    assert r.status_code == 200
    results = check_contract(r.json(), smiles)
    assert [x["status"] for x in results] == [
        "ok",
        "invalid_input",
        "invalid_input",
        "invalid_input",
    ]
    assert "too long" in results[1]["error"]


def test_lone_surrogate_is_invalid_input_not_500(client: TestClient) -> None:
    body = b'{"model": "solubility", "smiles": ["CCO", "C\\ud800C"], "ids": ["x\\udfff", 2]}'
    r = client.post("/v1/predict", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["ok", "invalid_input"]
    assert results[1]["value"] is None and results[0]["id"] == "x\\udfff" and results[1]["id"] == 2


def test_unknown_model_404(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"model": "nope", "smiles": ["CCO"]})
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_too_many_smiles_413(client: TestClient, settings: Settings) -> None:
    r = client.post(
        "/v1/predict", json={"model": "solubility", "smiles": ["C"] * (settings.max_batch + 1)}
    )
    assert r.status_code == 413 and "MOLPROP_MAX_BATCH" in r.json()["detail"]
    r = client.post(
        "/v1/predict", json={"model": "solubility", "smiles": ["C"] * settings.max_batch}
    )
    assert r.status_code == 200 and len(r.json()["results"]) == settings.max_batch


def test_body_too_large_413(client: TestClient, settings: Settings) -> None:
    big = {"model": "solubility", "smiles": ["C" * 100] * 300}  # > 20 kB
    assert client.post("/v1/predict", json=big).status_code == 413

    def chunks():  # no Content-Length: counted while streaming
        for _ in range(30):
            yield b" " * 1000

    r = client.post("/v1/predict", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "MOLPROP_MAX_BODY_BYTES" in r.json()["detail"]


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b"[]",
        b'{"model": "solubility"}',
        b'{"model": "solubility", "smiles": []}',
        b'{"model": "solubility", "smiles": "CCO"}',
        b'{"model": "solubility", "smiles": [1, null]}',
        b'{"model": "solubility", "smiles": ["CCO"], "ids": ["a", "b"]}',
        b'{"model": "solubility", "smiles": ["CCO"], "extra": 1}',
    ],
)
def test_malformed_requests_422(client: TestClient, payload: bytes) -> None:
    r = client.post("/v1/predict", content=payload, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text


def test_api_key_required_when_set(settings: Settings) -> None:
    keyed = Settings(**{**settings.model_dump(), "api_key": "s3cret"})
    with TestClient(create_app(keyed)) as c:
        req = {"model": "solubility", "smiles": ["CCO"]}
        assert c.post("/v1/predict", json=req).status_code == 401
        assert c.post("/v1/predict", json=req, headers={"X-API-Key": "wrong"}).status_code == 401
        assert (
            c.get("/v1/models", headers={"X-API-Key": "s3cret\u00e9".encode("latin-1")}).status_code
            == 401
        )
        assert c.get("/v1/models").status_code == 401
        assert c.post("/v1/predict", json=req, headers={"X-API-Key": "s3cret"}).status_code == 200
        assert c.get("/v1/models/solubility", headers={"X-API-Key": "s3cret"}).status_code == 200
        assert c.get("/health").status_code == 200  # health stays open for probes


def test_docs_and_openapi(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/health", "/v1/predict", "/v1/models", "/v1/models/{name}"} <= set(paths)


def test_artifact_without_domain_has_no_in_domain(model_dir, tmp_path) -> None:
    import shutil

    copy = tmp_path / "bbb"
    shutil.copytree(model_dir / "bbb", copy)
    (copy / "domain.safetensors").unlink()
    frame = Predictor.from_pretrained(copy).predict(["CCO"])
    assert "in_domain" not in frame.columns and "similarity" not in frame.columns
    assert frame["status"].tolist() == ["ok"]
    with TestClient(create_app(Settings(model_dir=tmp_path))) as c:
        r = c.post("/v1/predict", json={"model": "bbb", "smiles": ["CCO"]})
    assert r.json()["results"][0]["in_domain"] is None and r.json()["results"][0]["status"] == "ok"
    assert r.json()["results"][0]["similarity"] is None
