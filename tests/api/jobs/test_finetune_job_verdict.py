"""A fine-tune job's status carries its held-out metrics, baselines and verdict; a model that
does not beat the mean predictor on validation is not published unless the job asked
``force_publish`` (the job is done, ``published: false`` with the reason)."""

from __future__ import annotations

import pandas as pd

from molprop.jobstore import make_engine, store
from tests.api.jobs.helpers import REPO
from tests.api.jobs.test_jobs_lifecycle import run_worker


def constant_csv() -> bytes:
    """60 real molecules with one label value: the mean predictor is exact on every part."""
    data = pd.read_csv(REPO / "data/moleculenet/delaney_chemprop.csv.gz").iloc[300:360]
    return data[["smiles"]].assign(y=1.5).to_csv(index=False).encode()


def submit(client, name: str, **extra: str) -> str:
    form = {"kind": "finetune", "model": "solubility", "name": name, "target_column": "y"}
    r = client.post(
        "/v1/jobs", files={"file": ("a.csv", constant_csv())}, data={**form, "epochs": "2", **extra}
    )
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_losing_model_is_not_published_unless_forced(jobs_client, db_url, model_dir, tmp_path):
    kept = submit(jobs_client, "kept_back")
    forced = submit(jobs_client, "forced", force_publish="true")
    assert run_worker(db_url, model_dir, tmp_path) == 2

    done = jobs_client.get(f"/v1/jobs/{kept}").json()
    assert done["status"] == "done", done
    assert done["published"] is False and done["new_model"] is None
    report = done["report"]
    assert report["verdict"]["beats_mean"] is False
    assert report["verdict"]["part"] == "val" and report["verdict"]["metric"] == "rmse"
    assert report["baselines"]["val"]["mean"]["rmse"] < 1e-9 < report["metrics"]["val"]["rmse"]
    assert {"mean", "start", "start_linear"} <= set(report["baselines"]["test"])
    assert report["metrics"]["test"]["n"] > 0
    assert report["reason"].startswith("not published: the fine-tuned model does NOT beat")
    assert "force_publish" in report["reason"]

    published = jobs_client.get(f"/v1/jobs/{forced}").json()
    assert published["status"] == "done" and published["published"] is True
    assert published["new_model"] == "forced"
    assert "force_publish" in published["report"]["reason"]

    engine = make_engine(db_url)
    try:
        assert store.model_names(engine) == ["forced"]
    finally:
        engine.dispose()
    listed = {j["id"]: j for j in jobs_client.get("/v1/jobs").json()["jobs"]}
    assert listed[kept]["published"] is False
    r = jobs_client.post("/v1/predict", json={"model": "kept_back", "smiles": ["CCO"]})
    assert r.status_code == 404, r.text
