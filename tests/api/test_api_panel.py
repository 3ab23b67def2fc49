"""``POST /v1/predict`` with a panel or a list of models, and ``GET /v1/panels``, over the shipped
models: every endpoint of every row is what its model's Predictor says, a bad SMILES fails alike
for every endpoint and leaves the other rows whole, unknown models are a 422 naming them, the
work budget counts every model, and single-model requests answer as before."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api.budget import predictor_costs
from api.main import create_app
from api.settings import Settings
from molprop.inference import Panel, Predictor
from molprop.inference.physchem import PROPERTIES, physchem_frame

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "pretrained"
ESOL = REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"
FIELDS = ("std", "low", "high", "percentile", "similarity")


def _serve(root: Path, models: list[str], panels: dict[str, object]) -> Path:
    """A model directory of links to shipped models, with the given panel files."""
    root.mkdir()
    for name in models:
        (root / name).symlink_to(SHIPPED / name, target_is_directory=True)
    (root / "panels").mkdir()
    for name, content in panels.items():
        if isinstance(content, Path):
            shutil.copy(content, root / "panels" / f"{name}.json")
        else:
            (root / "panels" / f"{name}.json").write_text(json.dumps(content))
    return root


def _settings(root: Path, **limits: int) -> Settings:
    return Settings(model_dir=root, max_batch=20, max_smiles_length=120,
                    data_dir=root.parent / "data", job_workers=0, **limits)  # fmt: skip


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    shipped = sorted(p.parent.name for p in SHIPPED.glob("*/config.json"))
    future = {"name": "future", "models": ["solubility", "admet_herg"]}
    panels = {"admet": SHIPPED / "panels" / "admet.json", "future": future}
    root = _serve(tmp_path_factory.mktemp("panel") / "models", shipped, panels)
    with TestClient(create_app(_settings(root))) as c:
        yield c


@pytest.fixture(scope="module")
def esol() -> list[str]:
    return pd.read_csv(ESOL)["smiles"].sample(3, random_state=11).tolist()


def _approx(got: object, want: object) -> bool:
    if want is None or (isinstance(want, float) and math.isnan(want)) or want is pd.NA:
        return got is None
    return got == pytest.approx(float(want), rel=1e-6, abs=1e-9)


def test_the_panels_are_listed_with_their_endpoints(client: TestClient) -> None:
    r = client.get("/v1/panels")
    assert r.status_code == 200, r.text
    panels = {p["name"]: p for p in r.json()}
    assert sorted(panels) == ["admet", "future"]
    admet = panels["admet"]
    assert admet["models"] == json.loads((SHIPPED / "panels" / "admet.json").read_text())["models"]
    assert admet["missing"] == [] and admet["description"]
    panel = Panel.from_name(str(SHIPPED / "panels" / "admet.json"))
    assert [(e["target"], e["model"]) for e in admet["endpoints"]] == [
        (e.target, e.model) for e in panel.endpoints
    ]
    served = {e["target"]: e["model"] for e in admet["endpoints"]}
    assert served["hydration_free_energy"] == "hydration_free_energy"  # the panel's served_by
    assert len(served) == len(admet["endpoints"]) == 29
    assert {e["task"] for e in admet["endpoints"]} == {"regression", "classification"}
    assert panels["future"]["missing"] == ["admet_herg"]
    assert "solubility" in [m["name"] for m in client.get("/v1/models").json()]  # unchanged


def test_the_admet_panel_equals_each_predictor_field_by_field(
    client: TestClient, esol: list[str]
) -> None:
    r = client.post("/v1/predict", json={"model": "admet", "smiles": esol, "ids": [1, 2, 3]})
    assert r.status_code == 200, r.text
    assert "inference;dur=" in r.headers["server-timing"]
    body = r.json()
    assert body["panel"] == "admet" and body["interval"] == 0.9
    names = [m["name"] for m in body["models"]]
    served = {e["target"]: e["model"] for e in body["results"][0]["endpoints"]}
    assert names == json.loads((SHIPPED / "panels" / "admet.json").read_text())["models"]
    results = body["results"]
    assert [x["index"] for x in results] == [0, 1, 2] and [x["id"] for x in results] == [1, 2, 3]
    described = physchem_frame(esol)
    for name in names:
        predictor = Predictor.from_pretrained(name)
        frame = predictor.predict(esol, interval=0.9)
        for i, row in enumerate(frame.to_dict("records")):
            result = results[i]
            assert result["smiles"] == esol[i] and result["status"] == row["status"] == "ok"
            assert result["standardized_smiles"] == row["standardized_smiles"]
            mine = [e for e in result["endpoints"] if e["model"] == name]
            units = dict(zip(predictor.target_names, predictor.config.task.units))
            targets = [t for t in predictor.target_names if served[t] == name]
            assert [e["target"] for e in mine] == targets
            for endpoint, target in zip(mine, targets, strict=True):
                unit = units[target]
                assert endpoint["status"] == "ok" and endpoint["unit"] == unit
                assert _approx(endpoint["value"], row[target])
                assert _approx(endpoint["std"], row[f"{target}_std"])
                assert _approx(endpoint["low"], row.get(f"{target}_low"))
                assert _approx(endpoint["high"], row.get(f"{target}_high"))
                assert _approx(endpoint["percentile"], row[f"{target}_percentile"])
                assert _approx(endpoint["similarity"], row["similarity"])
                assert endpoint["in_domain"] == bool(row["in_domain"])
                assert endpoint["error"] is None
    for i, result in enumerate(results):
        physchem = result["physchem"]
        assert physchem["described_smiles"] == described["described_smiles"][i]
        for name in PROPERTIES:
            assert physchem["properties"][name] == pytest.approx(described[name][i]), name
        assert physchem["rules"]["lipinski_pass"] == bool(described["lipinski_pass"][i])
    # a regression endpoint has its interval, the classifier none
    endpoints = {e["target"]: e for e in results[0]["endpoints"]}
    logs = endpoints["solubility_aqsoldb"]
    assert logs["low"] < logs["value"] < logs["high"]
    assert endpoints["bbb_b3db"]["low"] is None


def test_a_bad_smiles_fails_for_every_endpoint_and_the_others_are_whole(
    client: TestClient, esol: list[str]
) -> None:
    smiles = [esol[0], "C1CC", "[Na+].[Cl-]", "C" * 121, esol[1]]
    body = {"models": ["lipophilicity", "solubility"], "smiles": smiles, "interval": None}
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["panel"] is None and answer["interval"] is None
    results = answer["results"]
    status = ["ok", "invalid_input", "unsupported", "invalid_input", "ok"]
    assert [x["status"] for x in results] == status
    for i in (1, 2, 3):
        row = results[i]
        assert row["error"] and [e["target"] for e in row["endpoints"]] == ["logD_7.4", "logS"]
        for endpoint in row["endpoints"]:
            assert (endpoint["status"], endpoint["error"]) == (row["status"], row["error"])
            assert endpoint["value"] is None and endpoint["in_domain"] is None
    assert "too long" in results[3]["error"] and results[3]["physchem"] is None
    assert results[1]["physchem"] is None and results[2]["physchem"] is not None  # a salt
    alone = Predictor.from_pretrained("solubility").predict(smiles[:3], interval=None)
    assert results[1]["error"] == alone["error"][1] and results[2]["error"] == alone["error"][2]
    for i in (0, 4):
        for endpoint in results[i]["endpoints"]:
            assert endpoint["status"] == "ok" and endpoint["value"] is not None
            assert endpoint["low"] is None and endpoint["similarity"] is not None


def test_unknown_models_and_bad_panels_are_422_naming_them(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"models": ["solubility", "no_such"], "smiles": ["CCO"]})
    assert r.status_code == 422 and "'no_such'" in r.json()["detail"]
    r = client.post("/v1/predict", json={"model": "future", "smiles": ["CCO"]})
    assert r.status_code == 422
    assert "panel 'future' needs model(s) ['admet_herg']" in r.json()["detail"]
    both = {"models": ["homo_lumo_gap", "homo_lumo_gap_3d"], "smiles": ["CCO"]}
    r = client.post("/v1/predict", json=both)
    assert r.status_code == 422 and "target 'gap_ev'" in r.json()["detail"]
    r = client.post("/v1/predict", json={"model": "admet", "smiles": ["CCO"], "interval": 0.999})
    assert r.status_code == 422 and "model 'admet_regression'" in r.json()["detail"]
    for body in (
        {"smiles": ["CCO"]},
        {"model": "solubility", "models": ["solubility"], "smiles": ["CCO"]},
        {"models": [], "smiles": ["CCO"]},
        {"models": "solubility", "smiles": ["CCO"]},
    ):
        assert client.post("/v1/predict", json=body).status_code == 422, body
    r = client.post("/v1/predict", json={"model": "no_such", "smiles": ["CCO"]})
    assert r.status_code == 404  # an unknown single model: as before


def test_a_single_model_answers_as_before(client: TestClient) -> None:
    r = client.post("/v1/predict", json={"model": "solubility", "smiles": ["CCO", "C1CC"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"model", "version", "unit", "calibration", "results"}
    assert body["results"][0]["value"] is not None and "endpoints" not in body["results"][0]


def test_the_work_budget_counts_every_model(tmp_path: Path, esol: list[str]) -> None:
    """A limit one model's tokens fit in but two models' do not: 413 for the pair only."""
    root = _serve(tmp_path / "models", ["solubility", "lipophilicity"], {})
    one = sum(c.tokens for c in predictor_costs(esol, Predictor.from_pretrained("solubility")))
    with TestClient(create_app(_settings(root, max_request_tokens=one))) as c:
        pair = {"models": ["solubility", "lipophilicity"], "smiles": esol}
        r = c.post("/v1/predict", json=pair)
        assert r.status_code == 413
        assert f"{2 * one} attention tokens" in r.json()["detail"]
        assert "MOLPROP_MAX_REQUEST_TOKENS" in r.json()["detail"]
        assert c.post("/v1/predict", json={"models": ["solubility"], "smiles": esol}).is_success
        assert c.post("/v1/predict", json={"model": "lipophilicity", "smiles": esol}).is_success


def test_every_interval_says_how_it_covered_its_models_test_molecules(client: TestClient) -> None:
    """``GET /v1/panels`` and ``GET /v1/models`` give each regression endpoint its intervals'
    measured coverage per level on its model's test part (that model's metrics.json, with
    the 95 % Clopper–Pearson interval and a verdict); a classifier's endpoints have none."""
    from molprop.artifact.coverage import clopper_pearson

    admet = {p["name"]: p for p in client.get("/v1/panels").json()}["admet"]
    verdicts = {}
    for endpoint in admet["endpoints"]:
        metrics = json.loads((SHIPPED / endpoint["model"] / "metrics.json").read_text())
        levels = metrics["calibration"]["test"].get(endpoint["target"], {}).get("levels", {})
        got = endpoint["interval_coverage"]
        if endpoint["task"] == "classification":
            assert got == [] and levels == {}
            continue
        assert [c["level"] for c in got] == sorted(float(k) for k in levels)
        for c in got:
            measured = levels[f"{c['level']:g}"]
            assert (c["coverage"], c["n"]) == (measured["coverage"], measured["n"])
            low, high = clopper_pearson(round(c["coverage"] * c["n"]), c["n"])
            assert (c["cp_low"], c["cp_high"]) == (pytest.approx(low), pytest.approx(high))
            want = "below" if high < c["level"] else "above" if low > c["level"] else "holds"
            assert c["verdict"] == want
        verdicts[endpoint["target"]] = {c["level"]: c["verdict"] for c in got}
    assert verdicts["clearance_microsome_rat"][0.9] == "below"
    assert verdicts["ld50_zhu"][0.9] == "above"
    assert verdicts["solubility_aqsoldb"][0.9] == "holds"
    models = {m["name"]: m for m in client.get("/v1/models").json()}
    rat = next(t for t in models["admet_regression"]["targets"]
               if t["name"] == "clearance_microsome_rat")  # fmt: skip
    panel_rat = next(e for e in admet["endpoints"] if e["target"] == "clearance_microsome_rat")
    assert rat["interval_coverage"] == panel_rat["interval_coverage"]
