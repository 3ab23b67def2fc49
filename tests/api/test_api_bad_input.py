"""Bad input never gives a 500 or a crash: non-finite JSON numbers, huge or deep bodies, 422
bodies that stay short, and an empty ``MOLPROP_API_KEY`` that must not switch auth off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from api.main import create_app
from api.settings import Settings
from tests.api.conftest import REPO


def post_raw(client: TestClient | httpx.Client, body: bytes) -> httpx.Response:
    return client.post("/v1/predict", content=body, headers={"content-type": "application/json"})


# ----------------------------------------------------------------------- NaN / Infinity
NON_FINITE = [
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [NaN]}',
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [Infinity]}',
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [-Infinity]}',
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [1e999]}',
    b'{"model": NaN, "smiles": ["CCO"]}',
    b'{"model": "solubility", "smiles": [NaN]}',
    b'{"model": "solubility", "smiles": NaN}',
    b"NaN",
    b"Infinity",
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [' + b"9" * 5000 + b"]}",
]


@pytest.mark.parametrize("payload", NON_FINITE, ids=lambda p: p[:60].decode())
def test_non_finite_numbers_422_not_500(client: TestClient, payload: bytes) -> None:
    r = post_raw(client, payload)
    assert r.status_code == 422, r.text
    assert isinstance(r.json()["detail"], list)  # a well-formed JSON error body


def test_non_finite_in_a_validated_field_is_reported_without_nan(client: TestClient) -> None:
    r = post_raw(client, b'{"model": "solubility", "smiles": ["CCO"], "ids": [1.5]}')
    assert r.status_code == 422
    r = post_raw(client, b'{"model": "solubility", "smiles": ["CCO"], "ids": [NaN]}')
    assert "NaN" in json.dumps(r.json()) and "finite" in json.dumps(r.json())


# ----------------------------------------------------------------------- short 422 bodies
def test_422_does_not_echo_the_whole_input(client: TestClient) -> None:
    smiles = ["c1ccccc1" * 10] * 40
    body = {"model": "solubility", "smiles": smiles, "ids": ["only one"]}  # model-level error
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 422
    assert "ids has 1 entries but smiles has 40" in r.text
    assert "c1ccccc1c1ccccc1" not in r.text and len(r.content) < 1000
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": "C" * 15_000})
    assert r.status_code == 422 and len(r.content) < 1000
    assert "15000 characters" in r.text


def test_422_error_list_is_capped(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": list(range(50))})
    assert r.status_code == 422
    body = r.json()
    assert len(body["detail"]) == 20 and body["errors_not_shown"] == 30
    assert body["detail"][0]["loc"] == ["body", "smiles", 0]


def test_422_with_lone_surrogate_input(client: TestClient) -> None:
    r = post_raw(client, b'{"model": "solubility", "smiles": "C\\ud800C"}')
    assert r.status_code == 422 and "\\\\ud800" in r.text


# ----------------------------------------------------------------------- never 500
NASTY = [
    b"[" * 5000 + b"]" * 5000,  # deeper than the JSON parser goes
    b'{"model": "solubility", "smiles": ["CCO"]' + b"}" * 10,
    b"\xff\xfe\x00garbage",
    b'{"model": "solubility", "smiles": ["\\u0000", "C\\u0000C"]}',
    b'{"model": "solubility", "smiles": ["' + b"[" * 110 + b'"]}',
    b'{"model": "solubility", "smiles": ["' + b"C1" * 55 + b'"]}',
    b'{"model": "solubility", "smiles": ["' + b"(" * 110 + b'C"]}',
    b'{"model": "solubility", "smiles": ["' + b"C%99" * 25 + b'"]}',
    b'{"model": "solubility", "smiles": ["[Uuo+99]", "[2H][2H]", "*", "[*]C", "C=1=C=1"]}',
    b'{"model": "' + b"m" * 300 + b'", "smiles": ["CCO"]}',
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [{"a": 1}]}',
    b'{"model": "solubility", "smiles": ["CCO"], "ids": [true]}',
]


@pytest.mark.parametrize("payload", NASTY, ids=lambda p: repr(p[:30]))
def test_nasty_bodies_never_500(client: TestClient, payload: bytes) -> None:
    r = post_raw(client, payload)
    assert r.status_code < 500, r.text
    if r.status_code == 200:
        statuses = ("ok", "invalid_input", "unsupported", "error")
        assert all(x["status"] in statuses for x in r.json()["results"])


def test_live_server_survives_bad_input(live_server: str) -> None:
    with httpx.Client(base_url=live_server, timeout=60) as http:
        for payload in NON_FINITE + NASTY:
            assert post_raw(http, payload).status_code < 500, payload[:60]
        assert http.get("/health").status_code == 200
        r = http.post("/v1/predict", json={"model": "solubility", "smiles": ["CCO"]})
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "ok"


# ----------------------------------------------------------------------- empty API key
@pytest.mark.parametrize("key", ["", "   ", "\t\n"])
def test_empty_api_key_refused(key: str, monkeypatch, model_dir) -> None:
    with pytest.raises(ValidationError, match="MOLPROP_API_KEY is set but empty"):
        Settings(model_dir=model_dir, api_key=key)
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(model_dir))
    monkeypatch.setenv("MOLPROP_API_KEY", key)
    with pytest.raises(ValidationError, match="MOLPROP_API_KEY is set but empty"):
        create_app()  # settings from the environment


def test_app_from_environment_exits_with_reason_not_secret(monkeypatch, model_dir) -> None:
    from api.main import create_app_from_environment

    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(model_dir))
    monkeypatch.setenv("MOLPROP_API_KEY", " s3cret-value ")
    with pytest.raises(SystemExit) as info:
        create_app_from_environment()
    message = str(info.value)
    assert "MOLPROP_API_KEY" in message and "whitespace" in message
    assert "s3cret-value" not in message


def test_api_key_with_surrounding_whitespace_refused(model_dir) -> None:
    with pytest.raises(ValidationError, match="whitespace"):
        Settings(model_dir=model_dir, api_key=" s3cret")


def test_valid_api_key_still_enforced(model_dir) -> None:
    with TestClient(create_app(Settings(model_dir=model_dir, api_key="k"))) as c:
        assert c.get("/v1/models").status_code == 401
        assert c.get("/v1/models", headers={"X-API-Key": "k"}).status_code == 200


def test_uvicorn_refuses_to_start_with_empty_api_key(model_dir) -> None:
    env = {**os.environ, "MOLPROP_MODEL_DIR": str(model_dir), "MOLPROP_API_KEY": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1", "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"uvicorn started with an empty MOLPROP_API_KEY:\n{out.decode()[-2000:]}")
    assert proc.returncode != 0
    assert "MOLPROP_API_KEY is set but empty" in out.decode()
