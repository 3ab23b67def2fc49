"""A multitask model (one artifact, two targets with their own units; tiny, trained here on real
ESOL rows) in the service: ``/v1/models`` reports every target with its unit, ``POST
/v1/predict`` answers it as a panel of that one model with exactly what its Predictor says, a
panel mixes it with a one-target model, bad rows stay per-row ``invalid_input``, explain asks
which target, and a predict job's result CSV has every target's columns."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.inference import Predictor
from molprop.jobs import Worker, WorkerConfig
from tests.api.conftest import ESOL, REPO, train_multitask
from tests.api.conftest import MULTITASK_TARGETS as TARGETS

SHIPPED = REPO / "pretrained"
MULTI = "esol_multi"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The multitask model, the shipped one-target ``solubility`` beside it, and a panel of
    both (``mixed``)."""
    root = tmp_path_factory.mktemp("multitask") / "models"
    root.mkdir()
    train_multitask(root / MULTI, root.parent)
    (root / "solubility").symlink_to(SHIPPED / "solubility", target_is_directory=True)
    (root / "panels").mkdir()
    panel = {"name": "mixed", "models": ["solubility", MULTI]}
    (root / "panels" / "mixed.json").write_text(json.dumps(panel))
    return root


@pytest.fixture(scope="module")
def settings(model_dir: Path) -> Settings:
    return Settings(model_dir=model_dir, max_batch=20, max_smiles_length=120,
                    max_heavy_atoms=60, data_dir=model_dir.parent / "data",
                    job_workers=0, job_chunk_rows=4)  # fmt: skip


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture(scope="module")
def multi(model_dir: Path) -> Predictor:
    return Predictor.from_pretrained(model_dir / MULTI)


@pytest.fixture(scope="module")
def esol() -> list[str]:
    return pd.read_csv(ESOL)["smiles"].iloc[400:404].tolist()


def _approx(got: object, want: object) -> bool:
    if want is None or want is pd.NA or (isinstance(want, float) and math.isnan(want)):
        return got is None
    return got == pytest.approx(float(want), rel=1e-6, abs=1e-9)


def _check_endpoint(endpoint: dict, row: dict, target: str, model: str) -> None:
    """One endpoint of the response against the row its model's Predictor predicted alone."""
    assert (endpoint["target"], endpoint["model"]) == (target, model)
    assert endpoint["status"] == row["status"] == "ok" and endpoint["error"] is None
    assert _approx(endpoint["value"], row[target])
    for field in ("std", "low", "high", "percentile"):
        assert _approx(endpoint[field], row.get(f"{target}_{field}")), (target, field)
    assert _approx(endpoint["similarity"], row["similarity"])
    assert endpoint["in_domain"] == bool(row["in_domain"])


def test_models_report_every_target_with_its_unit(client: TestClient, model_dir: Path) -> None:
    r = client.get("/v1/models")
    assert r.status_code == 200, r.text
    models = {m["name"]: m for m in r.json()}
    assert sorted(models) == [MULTI, "solubility"]
    multi = models[MULTI]
    assert [{k: t[k] for k in ("name", "unit")} for t in multi["targets"]] == [
        {"name": t, "unit": u} for t, u in TARGETS.items()
    ]
    assert multi["target"] is None and multi["unit"] is None
    assert multi["task"] == "regression" and multi["n_members"] == 2
    single = models["solubility"]  # a one-target model: as before, plus its targets
    shipped = Predictor.from_pretrained("solubility")
    assert single["target"] == shipped.target_names[0] == "logS"
    assert single["unit"] == shipped.config.task.units[0]
    assert [(t["name"], t["unit"]) for t in single["targets"]] == [("logS", single["unit"])]
    card = client.get(f"/v1/models/{MULTI}")
    assert card.status_code == 200 and card.json()["targets"] == multi["targets"]
    assert "tiny multitask test model" in card.json()["card"]
    assert client.get("/health").json()["models"] == [MULTI, "solubility"]


def test_predict_answers_a_multitask_model_with_one_endpoint_per_target(
    client: TestClient, multi: Predictor, esol: list[str]
) -> None:
    r = client.post(
        "/v1/predict", json={"model": MULTI, "smiles": esol, "ids": ["a", "b", "c", "d"]}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["panel"] is None and body["interval"] == 0.9
    assert [m["name"] for m in body["models"]] == [MULTI]
    assert body["models"][0]["targets"] == list(TARGETS)
    alone = multi.predict(esol, interval=0.9).to_dict("records")
    assert [x["id"] for x in body["results"]] == ["a", "b", "c", "d"]
    for result, row in zip(body["results"], alone):
        assert result["status"] == "ok" and result["physchem"] is not None
        assert [(e["target"], e["unit"]) for e in result["endpoints"]] == list(TARGETS.items())
        for endpoint, target in zip(result["endpoints"], TARGETS):
            _check_endpoint(endpoint, row, target, MULTI)
    # a calibrated regression target has an interval around its value, and a percentile
    first = body["results"][0]["endpoints"][0]
    assert first["low"] < first["value"] < first["high"] and 0 <= first["percentile"] <= 100


def test_a_panel_mixes_a_one_target_and_the_multitask_model(
    client: TestClient, multi: Predictor, esol: list[str]
) -> None:
    listed = {p["name"]: p for p in client.get("/v1/panels").json()}["mixed"]
    assert listed["missing"] == []
    assert [(e["target"], e["model"], e["unit"]) for e in listed["endpoints"]] == [
        ("logS", "solubility", "log10(mol/L)"),
        *((t, MULTI, u) for t, u in TARGETS.items()),
    ]
    by_name = client.post("/v1/predict", json={"model": "mixed", "smiles": esol})
    by_list = client.post("/v1/predict", json={"models": ["solubility", MULTI], "smiles": esol})
    assert by_name.status_code == by_list.status_code == 200, by_name.text
    assert by_name.json()["panel"] == "mixed" and by_list.json()["panel"] is None
    assert by_name.json()["results"] == by_list.json()["results"]
    single = Predictor.from_pretrained("solubility").predict(esol, interval=0.9)
    alone = multi.predict(esol, interval=0.9).to_dict("records")
    for result, row, one in zip(by_name.json()["results"], alone, single.to_dict("records")):
        logs, *rest = result["endpoints"]
        _check_endpoint(logs, one, "logS", "solubility")
        for endpoint, target in zip(rest, TARGETS):
            _check_endpoint(endpoint, row, target, MULTI)


def test_bad_rows_stay_per_row_invalid_input(client: TestClient, esol: list[str]) -> None:
    smiles = ["C1CC", "not a smiles", "", "C" * 121, "C" * 61, esol[0], "[Na+].[Cl-]"]
    for body in ({"model": MULTI}, {"model": "mixed"}):
        r = client.post("/v1/predict", json={**body, "smiles": smiles, "interval": None})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        statuses = [x["status"] for x in results]
        assert statuses[:5] == ["invalid_input"] * 5 and statuses[5] == "ok", statuses
        assert statuses[6] in ("unsupported", "invalid_input", "ok")
        for row in results[:5]:
            assert row["error"]
            for endpoint in row["endpoints"]:
                assert endpoint["status"] == "invalid_input" and endpoint["value"] is None
        assert "too long" in results[3]["error"] and "heavy atoms" in results[4]["error"]
        assert all(e["value"] is not None for e in results[5]["endpoints"])
    # bodies a multitask model cannot serve are 4xx naming why, never 500
    r = client.post("/v1/predict", json={"model": MULTI, "smiles": ["CCO"], "interval": 0.999})
    assert r.status_code == 422 and MULTI in r.json()["detail"]
    r = client.post("/v1/predict", json={"model": MULTI, "smiles": ["CCO"] * 21})
    assert r.status_code == 413
    r = client.post("/v1/predict", json={"model": MULTI, "smiles": [1, None]})
    assert r.status_code == 422


def test_explain_names_the_target_of_a_multitask_model(client: TestClient) -> None:
    r = client.post("/v1/explain", json={"model": MULTI, "smiles": ["CCO"], "svg": False})
    assert r.status_code == 422 and "measured_logS" in r.json()["detail"]
    r = client.post("/v1/explain", json={"model": MULTI, "smiles": ["CCO"], "target": "nope",
                                         "svg": False})  # fmt: skip
    assert r.status_code == 422 and "'nope'" in r.json()["detail"]
    r = client.post("/v1/explain", json={"model": MULTI, "smiles": ["CCO", "C1CC"],
                                         "target": "psa", "svg": False})  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["target"], body["unit"]) == ("psa", "Å²")
    assert [x["status"] for x in body["results"]] == ["ok", "invalid_input"]
    r = client.post("/v1/explain", json={"model": "solubility", "smiles": ["CCO"], "svg": False})
    assert r.status_code == 200 and r.json()["target"] == "logS"  # one target: as before


def test_a_predict_job_on_the_multitask_model_has_every_targets_columns(
    client: TestClient, settings: Settings, multi: Predictor, esol: list[str]
) -> None:
    smiles = [*esol, "C1CC", *esol[:2]]
    r = client.post("/v1/jobs", json={"model": MULTI, "smiles": smiles, "interval": 0.8})
    assert r.status_code == 202, r.text
    job = r.json()
    config = WorkerConfig(database_url=settings.job_database_url, data_dir=settings.data_dir,
                          model_dir=settings.model_dir, exit_when_idle=True, lease_s=10)  # fmt: skip
    assert Worker(config).run() == 1
    done = client.get(f"/v1/jobs/{job['id']}").json()
    assert (done["status"], done["rows_done"]) == ("done", len(smiles)), done
    r = client.get(f"/v1/jobs/{job['id']}/results")
    assert r.status_code == 200
    out = pd.read_csv(io.StringIO(r.text))
    want = multi.predict(smiles, interval=0.8)
    for target in TARGETS:
        for column in (target, f"{target}_std", f"{target}_low", f"{target}_high",
                       f"{target}_percentile"):  # fmt: skip
            assert column in out.columns, (column, list(out.columns))
            pd.testing.assert_series_equal(
                out[column], want[column].astype(float), check_names=False, rtol=1e-6
            )
    assert out["status"].tolist() == ["ok"] * 4 + ["invalid_input", "ok", "ok"]
    assert out["smiles"].tolist() == smiles
