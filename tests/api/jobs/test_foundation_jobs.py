"""Fine-tune jobs without ``model`` start from the served ``foundation`` model; without one
the service says so (422), and predict jobs still need a model."""

from __future__ import annotations

import shutil

import pandas as pd
from fastapi.testclient import TestClient

from api.main import create_app
from molprop.artifact.published import PublishedModels
from molprop.artifact.store import load_config
from molprop.jobstore import make_engine, migrate
from tests.api.jobs.helpers import REPO, job_settings
from tests.api.jobs.test_jobs_lifecycle import run_worker


def assay_csv() -> bytes:
    data = pd.read_csv(REPO / "data/moleculenet/delaney_chemprop.csv.gz").iloc[300:360]
    return data[["smiles", "logp"]].rename(columns={"logp": "y"}).to_csv(index=False).encode()


FORM = {"kind": "finetune", "name": "my_assay", "target_column": "y", "epochs": "2"}


def test_finetune_job_without_model_needs_a_foundation_model(jobs_client) -> None:
    r = jobs_client.post("/v1/jobs", files={"file": ("a.csv", assay_csv())}, data=FORM)
    assert r.status_code == 422, r.text
    assert "no 'foundation' model is served" in r.json()["detail"]
    r = jobs_client.post("/v1/jobs", files={"file": ("a.csv", b"smiles\nCCO\n")}, data={})
    assert r.status_code == 422 and "needs the model" in r.json()["detail"]


def test_finetune_job_without_model_starts_from_foundation(model_dir, tmp_path) -> None:
    models = tmp_path / "models"
    shutil.copytree(model_dir, models)
    shutil.copytree(model_dir / "solubility", models / "foundation")
    db_url = f"sqlite:///{tmp_path / 'jobs.sqlite'}"
    engine = make_engine(db_url)
    migrate(engine)
    engine.dispose()
    with TestClient(create_app(job_settings(models, db_url, tmp_path / "data"))) as client:
        r = client.post("/v1/jobs", files={"file": ("a.csv", assay_csv())}, data=FORM)
        assert r.status_code == 202, r.text
        job = r.json()
        assert (job["model"], job["new_model"]) == ("foundation", "my_assay")
        assert run_worker(db_url, models, tmp_path) == 1
        done = client.get(f"/v1/jobs/{job['id']}").json()
        assert done["status"] == "done", done
    engine = make_engine(db_url)
    made = PublishedModels(engine, tmp_path / "extracted").find("my_assay")
    assert made is not None
    engine.dispose()
    assert load_config(made).provenance.finetuned_from == str(models / "foundation")
