"""``POST /v1/embed``: one embedding per row (Predictor.embed's), per-row errors, the limits of
/v1/predict (413), the API key, and never a 500 on bad input."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop import Predictor
from tests.api.conftest import INVALID, VALID


def test_embed_rows_match_predictor_and_keep_order(client: TestClient, model_dir) -> None:
    smiles = [VALID[2], INVALID[0], VALID[1], "not a smiles", VALID[3]]
    r = client.post(
        "/v1/embed", json={"model": "solubility", "smiles": smiles, "ids": ["a", 1, "c", "d", 5]}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    predictor = Predictor.from_pretrained(model_dir / "solubility")
    assert body["model"] == "solubility" and body["dim"] == predictor.embedding_dim
    results = body["results"]
    assert [x["index"] for x in results] == list(range(len(smiles)))
    assert [x["id"] for x in results] == ["a", 1, "c", "d", 5]
    assert [x["smiles"] for x in results] == smiles
    assert [x["status"] for x in results] == ["ok", "invalid_input", "ok", "invalid_input", "ok"]
    expected = predictor.embed(smiles).filter(like="emb_").to_numpy(float)
    for i, x in enumerate(results):
        if x["status"] != "ok":
            assert x["embedding"] is None and x["error"]
            continue
        assert x["error"] is None and len(x["embedding"]) == body["dim"]
        np.testing.assert_allclose(x["embedding"], expected[i], atol=1e-6)


def test_embed_screened_rows_and_surrogates_are_per_row(
    client: TestClient, settings: Settings
) -> None:
    long = "C" * (settings.max_smiles_length + 1)
    body = '{"model": "bbb", "smiles": ["CCO", "C\\ud800C", "' + long + '", ""]}'
    r = client.post("/v1/embed", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["status"] for x in results] == [
        "ok",
        "invalid_input",
        "invalid_input",
        "invalid_input",
    ]
    assert "too long" in results[2]["error"] and results[1]["embedding"] is None


def test_embed_limits_like_predict(client: TestClient, settings: Settings) -> None:
    too_many = {"model": "solubility", "smiles": ["C"] * (settings.max_batch + 1)}
    for path in ("/v1/predict", "/v1/embed"):
        r = client.post(path, json=too_many)
        assert r.status_code == 413 and "MOLPROP_MAX_BATCH" in r.json()["detail"]
    full = {"model": "solubility", "smiles": ["C"] * settings.max_batch}
    r = client.post("/v1/embed", json=full)
    assert r.status_code == 200 and len(r.json()["results"]) == settings.max_batch


@pytest.mark.parametrize(
    "payload",
    [
        b'{"model": "solubility", "smiles": []}',
        b"{not json",
        b'{"model": "solubility", "smiles": [1, null]}',
        b'{"model": "solubility", "smiles": ["CCO"], "ids": ["a", "b"]}',
    ],
)
def test_embed_malformed_requests_422_like_predict(client: TestClient, payload: bytes) -> None:
    for path in ("/v1/predict", "/v1/embed"):
        r = client.post(path, content=payload, headers={"content-type": "application/json"})
        assert r.status_code == 422, (path, r.text)


def test_embed_unknown_model_404(client: TestClient) -> None:
    r = client.post("/v1/embed", json={"model": "nope", "smiles": ["CCO"]})
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_embed_token_budget_413(settings: Settings) -> None:
    tight = Settings(**{**settings.model_dump(), "max_request_tokens": 10})
    with TestClient(create_app(tight)) as c:
        r = c.post("/v1/embed", json={"model": "solubility", "smiles": ["CCCCCCCCCC"]})
        assert r.status_code == 413 and "MOLPROP_MAX_REQUEST_TOKENS" in r.json()["detail"]


def test_embed_needs_the_api_key_when_set(settings: Settings) -> None:
    keyed = Settings(**{**settings.model_dump(), "api_key": "s3cret"})
    with TestClient(create_app(keyed)) as c:
        req = {"model": "solubility", "smiles": ["CCO"]}
        assert c.post("/v1/embed", json=req).status_code == 401
        assert c.post("/v1/embed", json=req, headers={"X-API-Key": "wrong"}).status_code == 401
        r = c.post("/v1/embed", json=req, headers={"X-API-Key": "s3cret"})
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "ok"
