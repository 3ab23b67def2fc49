"""Work limits of the service: per-molecule cap, per-request token budget, bounded queue,
deadline, stop on disconnect, ``MOLPROP_MAX_SMILES_LENGTH`` both ways, whitespace in SMILES."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from tests.api.conftest import uvicorn_server


@contextmanager
def app_client(model_dir: Path, **overrides: object) -> Iterator[TestClient]:
    """A TestClient over an app of its own (its own models: tests may patch them)."""
    with TestClient(create_app(Settings(model_dir=model_dir, **overrides))) as c:
        yield c


@contextmanager
def busy_lane(client: TestClient, name: str) -> Iterator[None]:
    """Every worker of lane ``name`` blocked until the block ends."""
    from api.scheduler import Job

    lane = client.app.state.lanes[name]
    release = threading.Event()
    futures = [
        lane.submit(lambda: release.wait(30), Job(deadline=time.monotonic() + 60))
        for _ in range(lane.workers)
    ]
    try:
        yield
    finally:
        release.set()
        for f in futures:
            f.result(timeout=30)


def predict(client: TestClient, smiles: list[str]) -> httpx.Response:
    return client.post("/v1/predict", json={"model": "solubility", "smiles": smiles})


# ----------------------------------------------------------------------- per-molecule cap
def test_molecule_over_heavy_atom_cap_is_per_row_invalid(model_dir) -> None:
    with app_client(model_dir, max_heavy_atoms=30) as c:
        r = predict(c, ["CCO", "C" * 31, "C" * 30, "C1CC"])
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["ok", "invalid_input", "ok", "invalid_input"]
    error = results[1]["error"]
    assert "31 heavy atoms" in error and "30" in error and "MOLPROP_MAX_HEAVY_ATOMS" in error
    assert results[1]["value"] is None


# ----------------------------------------------------------------------- request token budget
def test_request_over_token_budget_413_with_numbers(model_dir) -> None:
    # ESA: 2 tokens per bond; "C" * 30 has 29 bonds = 58 tokens, benzene 6 bonds = 12 tokens
    with app_client(model_dir, max_request_tokens=128) as c:
        r = predict(c, ["C" * 30, "C" * 30, "c1ccccc1"])  # 128 tokens: at the limit
        assert r.status_code == 200 and [x["status"] for x in r.json()["results"]] == ["ok"] * 3
        r = predict(c, ["C" * 30, "C" * 30, "c1ccccc1", "CC"])  # 130 tokens
        assert r.status_code == 413
        detail = r.json()["detail"]
        assert "130" in detail and "128" in detail and "MOLPROP_MAX_REQUEST_TOKENS" in detail
        # rows refused before the model (invalid, over the cap) do not count
        r = predict(c, ["C" * 30, "C" * 30, "c1ccccc1", "C" * 2000])
        assert r.status_code == 200 and r.json()["results"][3]["status"] == "invalid_input"


def test_disconnected_atoms_count_their_real_tokens(model_dir) -> None:
    """200 unbonded carbons are 200 tokens of model work: 1,000 of them are over the budget
    (413, pointing to jobs), 5 of them (1,000 tokens) are not a small request."""
    dots = ".".join(["C"] * 200)
    with app_client(model_dir, small_request_tokens=500, request_timeout_s=5) as c:
        r = predict(c, [dots] * 1000)
        assert r.status_code == 413, r.text
        detail = r.json()["detail"]
        assert "200000 attention tokens" in detail and "POST /v1/jobs" in detail
        with busy_lane(c, "small"):  # the large lane serves them
            r = predict(c, [dots] * 5)
        assert r.status_code == 200, r.text
        assert [x["status"] for x in r.json()["results"]] == ["ok"] * 5


# ----------------------------------------------------------------------- bounded queue
def test_full_queue_503_with_retry_after_and_small_requests_still_served(model_dir) -> None:
    with app_client(model_dir, inference_workers=1, max_queue=0, small_request_tokens=100) as c:
        big = ["CCCCCCCCCCCCCCCCCCCC"] * 5  # 190 tokens: large lane
        assert predict(c, big).status_code == 200
        with busy_lane(c, "large"):
            r = predict(c, big)
            assert r.status_code == 503, r.text
            assert int(r.headers["Retry-After"]) >= 1
            assert "MOLPROP_MAX_QUEUE" in r.json()["detail"]
            small = predict(c, ["CCO"])  # its own lane: not behind the large requests
            assert small.status_code == 200 and small.json()["results"][0]["status"] == "ok"
            assert "inference;dur=" in small.headers["Server-Timing"]
        assert predict(c, big).status_code == 200  # room again


# ----------------------------------------------------------------------- deadline
class SlowFeaturizer:
    """Wraps a featuriser; every ``from_smiles`` takes ``delay`` seconds longer and is counted."""

    def __init__(self, inner: object, delay: float) -> None:
        self.inner, self.delay, self.calls = inner, delay, 0

    def from_smiles(self, smiles: str):
        self.calls += 1
        time.sleep(self.delay)
        return self.inner.from_smiles(smiles)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_deadline_504_and_work_stops(model_dir) -> None:
    with app_client(model_dir, request_timeout_s=0.5) as c:
        predictor = c.app.state.models["solubility"].predictor
        slow = SlowFeaturizer(predictor.screened, delay=0.05)
        predictor.screened = slow
        start = time.monotonic()
        r = predict(c, ["CCO"] * 60)  # 3 s of featurising
        elapsed = time.monotonic() - start
        assert r.status_code == 504, r.text
        assert "MOLPROP_REQUEST_TIMEOUT_S" in r.json()["detail"] and elapsed < 2.0
        time.sleep(0.3)
        stopped_at = slow.calls
        time.sleep(0.5)
        assert slow.calls == stopped_at < 60  # the worker stopped, it did not finish the rows


def test_deadline_passed_in_queue_never_starts(model_dir) -> None:
    with app_client(
        model_dir, request_timeout_s=0.3, inference_workers=1, small_request_tokens=1
    ) as c:
        predictor = c.app.state.models["solubility"].predictor
        slow = SlowFeaturizer(predictor.screened, delay=0.0)
        predictor.screened = slow
        with busy_lane(c, "large"):
            r = predict(c, ["CCO", "CCN"])
            assert r.status_code == 504
        time.sleep(0.2)
        assert slow.calls == 0


# ----------------------------------------------------------------------- client disconnect
def _post_and_hang_up(base: str, body: bytes, after_s: float) -> None:
    """Send a request on a raw socket and close it after ``after_s`` seconds, unanswered."""
    url = urlparse(base)
    with socket.create_connection((url.hostname, url.port)) as sock:
        head = (
            f"POST /v1/predict HTTP/1.1\r\nHost: {url.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        time.sleep(after_s)


def test_disconnected_client_work_stops(model_dir, tmp_path) -> None:
    """A heavy request (tens of seconds) abandoned after 1 s must not delay the next request on
    the same single worker (before: the next one waited for the abandoned work)."""
    env = {
        "inference_workers": "1",
        "small_request_tokens": "1",
        "max_heavy_atoms": "1000",
        "max_request_tokens": "1000000",
        "max_batch": "60",
    }
    heavy = (
        '{"model": "solubility", "smiles": [' + ", ".join(['"' + "C" * 1000 + '"'] * 60) + "]}"
    ).encode()
    with uvicorn_server(model_dir, tmp_path / "server.log", **env) as base:
        with httpx.Client(base_url=base, timeout=120) as http:
            assert (
                http.post(
                    "/v1/predict", json={"model": "solubility", "smiles": ["CCO"]}
                ).status_code
                == 200
            )
            _post_and_hang_up(base, heavy, after_s=1.0)
            start = time.monotonic()
            r = http.post("/v1/predict", json={"model": "solubility", "smiles": ["CCO", "CCN"]})
            waited = time.monotonic() - start
    assert r.status_code == 200
    assert waited < 4.0, f"the next request waited {waited:.1f} s behind abandoned work"


# ----------------------------------------------------------------------- MOLPROP_MAX_SMILES_LENGTH
def test_max_smiles_length_raised_admits_longer_smiles(model_dir) -> None:
    long = "C" * 1200  # over the library's default of 1000 characters
    with app_client(
        model_dir, max_smiles_length=1500, max_heavy_atoms=2000, max_request_tokens=10_000
    ) as c:
        r = predict(c, [long, "C" * 1501])
    results = r.json()["results"]
    assert r.status_code == 200 and results[0]["status"] == "ok", results[0]
    assert results[1]["status"] == "invalid_input" and "1501 > 1500" in results[1]["error"]


def test_max_smiles_length_lowered_rejects_with_setting_name(model_dir) -> None:
    with app_client(model_dir, max_smiles_length=50) as c:
        r = predict(c, ["C" * 50, "C" * 51])
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["ok", "invalid_input"]
    assert "51 > 50" in results[1]["error"] and "MOLPROP_MAX_SMILES_LENGTH" in results[1]["error"]


def test_max_smiles_length_from_environment(monkeypatch, model_dir) -> None:
    monkeypatch.setenv("MOLPROP_MAX_SMILES_LENGTH", "1500")
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(model_dir))
    assert Settings().max_smiles_length == 1500
    monkeypatch.setenv("MOLPROP_MAX_SMILES_LENGTH", "5000")
    monkeypatch.setenv("MOLPROP_MAX_BODY_BYTES", "4000")  # cannot carry one such SMILES
    with pytest.raises(ValueError, match="MOLPROP_MAX_BODY_BYTES"):
        Settings()


# ----------------------------------------------------------------------- whitespace
def test_whitespace_inside_smiles_is_invalid_input(client: TestClient) -> None:
    smiles = ["c1ccccc1 O", "CC\nO", "CC\tO", " CCO "]
    r = predict(client, smiles)
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["invalid_input"] * 3 + ["ok"]
    for x in results[:3]:
        assert "whitespace" in x["error"] and x["value"] is None
