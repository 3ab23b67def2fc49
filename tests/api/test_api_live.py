"""Against a real uvicorn process on 127.0.0.1: a round trip, concurrency, and an OpenAPI fuzz."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from molprop.inference import Predictor
from tests.api.conftest import INVALID, VALID


def test_uvicorn_round_trip(live_server: str) -> None:
    with httpx.Client(base_url=live_server, timeout=30) as http:
        assert http.get("/health").json()["status"] == "ok"
        names = [m["name"] for m in http.get("/v1/models").json()]
        assert names == ["bbb", "solubility"]
        r = http.post("/v1/predict", json={"model": "solubility", "smiles": ["CCO", "C1CC"]})
        assert r.status_code == 200
        results = r.json()["results"]
        assert results[0]["status"] == "ok" and math.isfinite(results[0]["value"])
        assert results[1]["status"] == "invalid_input" and results[1]["value"] is None
        assert http.post("/v1/predict", content=b"{oops").status_code == 422
        assert http.post("/v1/predict", json={"model": "x", "smiles": ["C"]}).status_code == 404


def test_concurrent_clients_get_their_own_answers(live_server: str, model_dir) -> None:
    """16 clients x 20 requests, mixed valid/invalid: every response correct, none lost."""
    pool = VALID + INVALID
    expected = Predictor.from_pretrained(model_dir / "solubility").predict(pool)
    want = dict(zip(pool, expected["logp"].tolist()))
    status = dict(zip(pool, expected["status"].tolist()))

    def client_run(c: int) -> int:
        done = 0
        with httpx.Client(base_url=live_server, timeout=60) as http:
            for k in range(20):
                smiles = [pool[(c * 7 + k * 3 + j) % len(pool)] for j in range(1 + (c + k) % 3)]
                ids = [f"{c}-{k}-{j}" for j in range(len(smiles))]
                r = http.post(
                    "/v1/predict", json={"model": "solubility", "smiles": smiles, "ids": ids}
                )
                assert r.status_code == 200, r.text
                results = r.json()["results"]
                assert [x["id"] for x in results] == ids
                assert [x["smiles"] for x in results] == smiles
                for x, smi in zip(results, smiles):
                    assert x["status"] == status[smi]
                    if x["status"] == "ok":
                        assert x["value"] == pytest.approx(want[smi], rel=1e-4, abs=1e-5)
                    else:
                        assert x["value"] is None
                done += 1
        return done

    with ThreadPoolExecutor(16) as ex:
        counts = list(ex.map(client_run, range(16)))
    assert counts == [20] * 16
    assert np.isfinite(expected.loc[expected["status"] == "ok", "logp"]).all()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_openapi_fuzz_never_5xx(live_server: str, mode: GenerationMode) -> None:
    """Bounded schemathesis fuzz of every operation in /openapi.json: no response is a 5xx."""
    schema = schemathesis.openapi.from_url(f"{live_server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert (
        len(operations) == 14
    )  # 5 + panels + embed + physchem + jobs (submit, list, status, results, cancel) + delete
    if mode == GenerationMode.NEGATIVE:  # only operations with inputs can be sent wrong ones
        with_input = ("/v1/predict", "/v1/explain", "/v1/models/{name}", "/v1/jobs")
        with_input += ("/v1/jobs/{job_id}", "/v1/jobs/{job_id}/results")
        operations = [op for op in operations if op.path in with_input]
    seen: list[int] = []
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=20,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case) -> None:
            response = case.call(base_url=live_server, timeout=30)
            seen.append(response.status_code)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
            )

        call()
    assert len(seen) >= 20
