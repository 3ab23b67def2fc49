"""``POST /v1/explain``: weights + SVG per row, per-row errors, caps (413) and no 500."""

from __future__ import annotations

import inspect
import math
from typing import get_args

import httpx
import pytest
from fastapi.testclient import TestClient
from rdkit import Chem

from api import explain
from api.explain import EXPLAIN_STEPS
from api.schemas import Status
from api.settings import Settings
from molprop.inference import STATUSES
from tests.api.conftest import INVALID, VALID


def test_explain_returns_weights_and_svg_per_row(client: TestClient) -> None:
    smiles = [VALID[1], INVALID[0], VALID[2], ""]
    r = client.post(
        "/v1/explain", json={"model": "solubility", "smiles": smiles, "ids": ["a", 2, "c", "d"]}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["model"] == "solubility" and body["space"] == "target"
    results = body["results"]
    assert [x["index"] for x in results] == [0, 1, 2, 3]
    assert [x["id"] for x in results] == ["a", 2, "c", "d"]
    assert [x["smiles"] for x in results] == smiles
    assert [x["status"] for x in results] == ["ok", "invalid_input", "ok", "invalid_input"]
    predicted = client.post("/v1/predict", json={"model": "solubility", "smiles": smiles}).json()
    for x, p in zip(results, predicted["results"]):
        if x["status"] != "ok":
            assert x["error"] and x["atoms"] == [] and x["svg"] is None and x["value"] is None
            continue
        mol = Chem.MolFromSmiles(x["smiles"])
        assert [a["index"] for a in x["atoms"]] == list(range(mol.GetNumAtoms()))
        assert [a["element"] for a in x["atoms"]] == [a.GetSymbol() for a in mol.GetAtoms()]
        assert x["value"] == pytest.approx(p["value"], rel=1e-4, abs=1e-5)
        diff = x["prediction"] - x["baseline"]
        total = sum(a["weight"] for a in x["atoms"])
        assert abs(total - diff) <= 0.01 * abs(diff) and abs(x["delta"]) <= 0.01 * abs(diff)
        assert x["svg"].startswith("<?xml") and x["svg"].rstrip().endswith("</svg>")
    lean = client.post("/v1/explain", json={"model": "bbb", "smiles": [VALID[0]], "svg": False})
    assert lean.status_code == 200 and lean.json()["space"] == "logit"
    row = lean.json()["results"][0]
    assert row["svg"] is None and row["status"] == "ok" and 0 <= row["value"] <= 1


def test_explain_bad_smiles_are_per_row_invalid_input(client: TestClient) -> None:
    r = client.post("/v1/explain", json={"model": "bbb", "smiles": INVALID})
    assert r.status_code == 200
    for x in r.json()["results"]:
        assert x["status"] == "invalid_input" and x["error"] and x["atoms"] == []
    body = b'{"model": "bbb", "smiles": ["CCO", "\\ud800"]}'  # a lone surrogate
    r = client.post("/v1/explain", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert [x["status"] for x in r.json()["results"]] == ["ok", "invalid_input"]


def test_explain_oversize_is_413_or_422_never_500(client: TestClient, settings: Settings) -> None:
    cap = min(settings.max_explain_batch, settings.max_batch)
    r = client.post("/v1/explain", json={"model": "solubility", "smiles": ["C"] * (cap + 1)})
    assert r.status_code == 413 and "MOLPROP_MAX_EXPLAIN_BATCH" in r.json()["detail"]
    # within the count cap, over the token budget (each token counted EXPLAIN_STEPS times)
    chain = "C" * 110  # 109 bonds: 218 ESA tokens
    n = settings.max_request_tokens // (218 * EXPLAIN_STEPS) + 1
    assert n <= cap
    r = client.post("/v1/explain", json={"model": "solubility", "smiles": [chain] * n})
    assert r.status_code == 413 and "MOLPROP_MAX_REQUEST_TOKENS" in r.json()["detail"]
    long = "C" * (settings.max_smiles_length + 1)  # per row, as in /v1/predict
    r = client.post("/v1/explain", json={"model": "solubility", "smiles": [long]})
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "invalid_input"
    for bad in (
        {"model": "solubility", "smiles": []},
        {"model": "solubility", "smiles": ["CCO"], "ids": [1, 2]},
        {"model": "solubility", "smiles": [1.5]},
        {"model": "solubility", "smiles": ["CCO"], "layer": "x"},
    ):
        assert client.post("/v1/explain", json=bad).status_code == 422, bad
    assert client.post("/v1/explain", json={"model": "nope", "smiles": ["C"]}).status_code == 404


def test_explain_through_uvicorn(live_server: str) -> None:
    r = httpx.post(
        f"{live_server}/v1/explain",
        json={"model": "bbb", "smiles": ["c1ccccc1N", "C1CC"]},
        timeout=60,
    )
    assert r.status_code == 200
    ok, bad = r.json()["results"]
    assert ok["status"] == "ok" and "</svg>" in ok["svg"]
    assert all(math.isfinite(a["weight"]) for a in ok["atoms"]) and len(ok["atoms"]) == 7
    assert bad["status"] == "invalid_input"


def test_explain_rows_use_the_inference_statuses() -> None:
    """As /v1/predict: statuses come from molprop.inference, none spelled out by the service."""
    assert (
        get_args(explain.ExplainResult.model_fields["status"].annotation)
        == STATUSES
        == get_args(Status)
    )
    source = inspect.getsource(explain.build_explain_results)
    assert not any(f'"{s}"' in source for s in STATUSES)
