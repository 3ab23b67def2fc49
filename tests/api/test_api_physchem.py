"""``POST /v1/physchem``: the rows of :func:`molprop.inference.physchem.physchem_frame`, per-row
errors, the request limits (413), the API key, and never a 500 on bad input."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.inference.physchem import PROPERTIES, physchem_frame

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
AZO = "Oc1ccccc1N=Nc1ccccc1"


def test_rows_equal_the_python_frame_in_order(client: TestClient) -> None:
    smiles = [ASPIRIN, "C1CC", AZO, "C" * 200, "[Na+].[O-]C(=O)c1ccccc1"]
    r = client.post("/v1/physchem", json={"smiles": smiles, "ids": ["a", 2, "c", "d", "e"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["units"]["molecular_weight"] == "Da" and body["units"]["tpsa"] == "Å²"
    results = body["results"]
    assert [x["index"] for x in results] == list(range(5))
    assert [x["id"] for x in results] == ["a", 2, "c", "d", "e"]
    assert [x["status"] for x in results] == ["ok", "invalid_input", "ok", "invalid_input", "ok"]
    assert "too long" in results[3]["error"]  # the settings' 120-character limit
    assert results[1]["properties"] is None and results[1]["alerts"] is None
    frame = physchem_frame(smiles)
    for i in (0, 2, 4):
        for name in PROPERTIES:
            assert results[i]["properties"][name] == pytest.approx(frame[name][i]), name
        assert results[i]["rules"]["lipinski_pass"] == bool(frame["lipinski_pass"][i])
    assert results[4]["described_smiles"] == "O=C(O)c1ccccc1"
    assert "azo_A(324)" in results[2]["alerts"]["pains"]
    assert results[0]["alerts"] == {"pains": [], "brenk": ["phenol_ester"], "nih": []}


def test_limits_and_bad_bodies_are_4xx(client: TestClient, settings: Settings) -> None:
    too_many = ["CCO"] * (settings.max_batch + 1)
    r = client.post("/v1/physchem", json={"smiles": too_many})
    assert r.status_code == 413 and "MOLPROP_MAX_BATCH" in r.json()["detail"]
    for body in ({"smiles": []}, {"smiles": "CCO"}, {"smiles": ["CCO"], "ids": [1, 2]}, {}):
        assert client.post("/v1/physchem", json=body).status_code == 422, body
    r = client.post(
        "/v1/physchem", content=b"\xff\xfe{", headers={"content-type": "application/json"}
    )
    assert 400 <= r.status_code < 500


def test_needs_the_api_key_when_set(settings: Settings) -> None:
    keyed = Settings(**{**settings.model_dump(), "api_key": "s3cret"})
    with TestClient(create_app(keyed)) as c:
        assert c.post("/v1/physchem", json={"smiles": ["CCO"]}).status_code == 401
        r = c.post("/v1/physchem", json={"smiles": ["CCO"]}, headers={"X-API-Key": "s3cret"})
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "ok"
