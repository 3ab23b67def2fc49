"""Jobs and models that belong to someone, on SQLite and on PostgreSQL: named API keys with
roles (a user key sees, reads and cancels only its own jobs, another key's job is a 404 like an
unknown id; publishing and deleting models needs an admin key), the single ``MOLPROP_API_KEY``
as one admin key, no key = the local single-user service, names a published model may not
take, deleting a published model, the page's default model, and the migration that adds the
job owner to a database made at the previous revision."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import inspect, text

from api.main import create_app
from molprop.artifact import Artifact
from molprop.jobstore import FinetuneOptions, make_engine, migrate, store
from molprop.jobstore.schema import metadata
from tests.api.jobs.helpers import job_settings, wait_for

ALICE, BOB, ROOT = "alice-key-0123456789", "bob-key-0123456789", "root-key-0123456789"
KEYS = f"alice:user:{ALICE}\nbob:user:{BOB}\n# the operator\nroot:admin:{ROOT}\n"
FINETUNE_CSV = b"smiles,y\nCCO,1.0\nCCC,2.0\nCCN,1.5\nc1ccccc1,3.0\n"


def as_key(key: str) -> dict[str, str]:
    return {"X-API-Key": key}


def predict_job(client: TestClient, key: str | None, smiles=("CCO", "CCN")) -> dict:
    headers = as_key(key) if key else {}
    r = client.post(
        "/v1/jobs", json={"model": "solubility", "smiles": list(smiles)}, headers=headers
    )
    assert r.status_code == 202, r.text
    return r.json()


def finetune(client: TestClient, key: str | None, name: str):
    form = {"kind": "finetune", "model": "solubility", "name": name, "target_column": "y"}
    headers = as_key(key) if key else {}
    return client.post(
        "/v1/jobs", files={"file": ("a.csv", FINETUNE_CSV)}, data=form, headers=headers
    )


@pytest.fixture
def keyed(model_dir: Path, db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    """The app with three named keys from a file: alice and bob (users), root (admin)."""
    keys = tmp_path / "keys.txt"
    keys.write_text(KEYS)
    settings = job_settings(model_dir, db_url, tmp_path / "data", api_keys_file=keys)
    with TestClient(create_app(settings)) as client:
        yield client


def test_a_user_key_sees_reads_and_cancels_only_its_own_jobs(keyed):
    mine = predict_job(keyed, ALICE)
    theirs = predict_job(keyed, BOB)
    assert (mine["owner"], theirs["owner"]) == ("alice", "bob")
    listed = keyed.get("/v1/jobs", headers=as_key(ALICE)).json()["jobs"]
    assert [j["id"] for j in listed] == [mine["id"]]
    assert keyed.get(f"/v1/jobs/{mine['id']}", headers=as_key(ALICE)).status_code == 200

    unknown = keyed.get("/v1/jobs/0123", headers=as_key(ALICE))
    for method, path in [
        ("get", f"/v1/jobs/{theirs['id']}"),
        ("get", f"/v1/jobs/{theirs['id']}/results"),
        ("delete", f"/v1/jobs/{theirs['id']}"),
    ]:
        r = getattr(keyed, method)(path, headers=as_key(ALICE))
        assert r.status_code == 404, (method, path, r.text)  # not 403: ids do not leak
        assert r.json()["detail"] == unknown.json()["detail"].replace("0123", theirs["id"])
    assert keyed.get(f"/v1/jobs/{theirs['id']}", headers=as_key(BOB)).json()["status"] == "queued"

    # an admin key sees every job and may cancel any
    everything = keyed.get("/v1/jobs", headers=as_key(ROOT)).json()["jobs"]
    assert {j["id"]: j["owner"] for j in everything} == {mine["id"]: "alice", theirs["id"]: "bob"}
    r = keyed.delete(f"/v1/jobs/{theirs['id']}", headers=as_key(ROOT))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    r = keyed.delete(f"/v1/jobs/{mine['id']}", headers=as_key(ALICE))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert keyed.get("/v1/jobs", headers={"X-API-Key": "nope"}).status_code == 401


def test_the_owner_is_stored_in_the_job_database(keyed, db_url):
    job = predict_job(keyed, BOB)
    engine = make_engine(db_url)
    try:
        assert store.get_job(engine, job["id"]).owner == "bob"
        assert [j.id for j in store.list_jobs(engine, owner="alice")] == []
    finally:
        engine.dispose()


def test_publishing_a_model_needs_an_admin_key(keyed):
    r = finetune(keyed, ALICE, "alices_model")
    assert r.status_code == 403 and "admin" in r.json()["detail"]
    r = finetune(keyed, ROOT, "roots_model")
    assert r.status_code == 202, r.text
    assert (r.json()["new_model"], r.json()["owner"]) == ("roots_model", "root")


def test_the_single_api_key_is_one_admin_key(model_dir, db_url, tmp_path):
    settings = job_settings(model_dir, db_url, tmp_path / "data", api_key="s3cret")
    with TestClient(create_app(settings)) as client:
        assert client.get("/v1/jobs").status_code == 401
        job = predict_job(client, "s3cret")
        assert job["owner"] == "admin"
        assert finetune(client, "s3cret", "published_by_admin").status_code == 202
        listed = client.get("/v1/jobs", headers=as_key("s3cret")).json()["jobs"]
        assert len(listed) == 2


def test_without_keys_everything_is_allowed(jobs_client, db_url):
    """The local single-user service: every job visible, publishing allowed."""
    engine = make_engine(db_url)
    try:
        options = FinetuneOptions(name="x", target_column="y")
        other = store.create_job(engine, "solubility", None, options, b"", "bob")
    finally:
        engine.dispose()
    mine = predict_job(jobs_client, None)
    assert mine["owner"] is None
    ids = {j["id"] for j in jobs_client.get("/v1/jobs").json()["jobs"]}
    assert ids == {mine["id"], other.id}
    assert jobs_client.get(f"/v1/jobs/{other.id}").status_code == 200
    assert finetune(jobs_client, None, "local_model").status_code == 202


ODD_NAMES = [
    ("CON", 422, "reserved"),
    ("nul", 422, "reserved"),
    ("Com1", 422, "reserved"),
    ("lpt9", 422, "reserved"),
    ("my.model", 422, "not allowed"),
    ("..", 422, "not allowed"),
    ("a/b", 422, "not allowed"),
    ("a\\b", 422, "not allowed"),
    (".hidden", 422, "not allowed"),
    ("Solubility", 409, "'solubility' (differing only by case)"),
    ("BBB", 409, "'bbb' (differing only by case)"),
    ("Pending", 409, "'pending' (differing only by case)"),
    ("pending", 409, "'pending' exists or is being made"),
]


def test_odd_and_clashing_model_names_are_refused(keyed):
    assert finetune(keyed, ROOT, "pending").status_code == 202
    for name, status, says in ODD_NAMES:
        r = finetune(keyed, ROOT, name)
        assert (r.status_code, says in r.json()["detail"]) == (status, True), (name, r.text)


def publish(db_url: str, model_dir: Path, name: str) -> str:
    """Store the ``solubility`` artifact as the published model ``name``, as a fine-tune job
    does when it ends (claim the job, store the files, mark it done) -> the job id."""
    engine = make_engine(db_url)
    try:
        options = FinetuneOptions(name=name, target_column="y")
        job = store.create_job(engine, "solubility", None, options, b"", "root")
        claimed = store.claim_job(engine, 30)
        assert claimed is not None and claimed.id == job.id
        files = Artifact(model_dir / "solubility").pack()
        store.finish_with_model(engine, job.id, claimed.claim, name, files)
    finally:
        engine.dispose()
    return job.id


def served(client: TestClient, key: str) -> list[str]:
    return [m["name"] for m in client.get("/v1/models", headers=as_key(key)).json()]


def test_a_published_model_can_be_deleted_by_an_admin(keyed, db_url, model_dir, tmp_path):
    job_id = publish(db_url, model_dir, "AAA")
    wait_for(lambda: "AAA" in served(keyed, ALICE), 30, "the published model", step=0.5)
    request = {"model": "AAA", "smiles": ["CCO"]}
    assert keyed.post("/v1/predict", json=request, headers=as_key(ALICE)).status_code == 200
    extracted = tmp_path / "data" / "models" / job_id / "AAA"
    assert (extracted / "config.json").is_file()

    # "AAA" sorts first, yet the page's default (first option) is a model-directory model
    page = keyed.get("/").text
    select = page.split('<select id="model"')[1].split("</select>")[0]
    options = re.findall(r'<option value="([^"]+)">', select)
    assert options == ["bbb", "solubility", "AAA"], options
    assert "published" in page.split('<option value="AAA">')[1].split("</option>")[0]

    assert keyed.delete("/v1/models/AAA", headers=as_key(ALICE)).status_code == 403
    r = keyed.delete("/v1/models/solubility", headers=as_key(ROOT))
    assert r.status_code == 409 and "cannot be deleted" in r.json()["detail"]
    assert keyed.delete("/v1/models/nope", headers=as_key(ROOT)).status_code == 404
    assert keyed.delete("/v1/models/AAA", headers={"X-API-Key": "nope"}).status_code == 401
    r = keyed.delete("/v1/models/AAA", headers=as_key(ROOT))
    assert r.status_code == 204, r.text
    assert "AAA" not in served(keyed, ALICE)
    assert keyed.post("/v1/predict", json=request, headers=as_key(ALICE)).status_code == 404
    assert not extracted.exists()
    assert keyed.delete("/v1/models/AAA", headers=as_key(ROOT)).status_code == 404
    # the name is free again
    assert finetune(keyed, ROOT, "AAA").status_code == 202


def test_a_model_deleted_elsewhere_is_no_longer_served(keyed, db_url, model_dir):
    """Another API process (or the database's operator) deleted it: this one stops serving
    it at its next look at the database."""
    publish(db_url, model_dir, "elsewhere")
    wait_for(lambda: "elsewhere" in served(keyed, ROOT), 30, "the published model", step=0.5)
    engine = make_engine(db_url)
    try:
        assert store.delete_model(engine, "elsewhere") is not None
    finally:
        engine.dispose()
    wait_for(lambda: "elsewhere" not in served(keyed, ROOT), 30, "the model to go", step=0.5)


def test_the_owner_migration_upgrades_a_database_of_the_previous_revision(empty_db_url):
    engine = make_engine(empty_db_url)
    try:
        migrate(engine, "0001")
        assert "owner" not in {c["name"] for c in inspect(engine).get_columns("jobs")}
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO jobs (id, kind, model, status, rows_total, rows_done, "
                    "chunks_total, options, input_columns, created_at, attempts) VALUES "
                    "('old', 'predict', 'solubility', 'done', 2, 2, 1, '{}', '[]', :at, 1)"
                ),
                {"at": datetime(2026, 1, 2, tzinfo=timezone.utc)},
            )
        migrate(engine)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        old = store.get_job(engine, "old")
        assert (old.status, old.rows_done, old.owner) == ("done", 2, None)
        options = FinetuneOptions(name="new", target_column="y")
        new = store.create_job(engine, "solubility", None, options, b"", owner="alice")
        assert [j.id for j in store.list_jobs(engine, owner="alice")] == [new.id]
        assert {j.id for j in store.list_jobs(engine)} == {"old", new.id}
    finally:
        engine.dispose()
