"""The job workers the service starts are supervised (``api.workers``), on SQLite and on
PostgreSQL: a real worker process killed with ``kill -9`` mid-job is logged and restarted after
its back-off, ``/health`` says ``degraded`` while no worker is alive and jobs wait, and the
restarted worker takes over the job whose lease expired and finishes it, every row once."""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
import time

import pandas as pd
from fastapi.testclient import TestClient

from api.main import create_app
from api.workers import WorkerSupervisor
from molprop.jobstore import make_engine, store
from tests.api.jobs.helpers import hiv_smiles, job_settings, poll_job, wait_for


def submit(client: TestClient, smiles: list[str]) -> str:
    r = client.post("/v1/jobs", json={"model": "solubility", "smiles": smiles})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_a_killed_worker_is_restarted_and_takes_its_job_over(model_dir, db_url, tmp_path, caplog):
    settings = job_settings(
        model_dir,
        db_url,
        tmp_path / "data",
        job_workers=1,
        job_lease_s=2,
        job_worker_backoff_s=3,
    )
    smiles = hiv_smiles(600, invalid_every=13)
    with (
        caplog.at_level(logging.INFO, logger="api.workers"),
        TestClient(create_app(settings)) as client,
    ):
        health = client.get("/health").json()
        assert health["status"] == "ok", health
        assert health["workers"] == {"configured": 1, "alive": 1, "restarts": 0}
        big = submit(client, smiles)
        small = submit(client, ["CCO", "c1ccccc1O"])
        wait_for(
            lambda: client.get(f"/v1/jobs/{big}").json()["rows_done"] >= 32,
            180,
            "the worker's first chunks",
            step=0.05,
        )
        [first] = client.app.state.workers.pids()
        os.kill(first, signal.SIGKILL)

        def degraded():
            r = client.get("/health")
            return r.json() if r.json()["status"] == "degraded" else None

        # the restart waits 3 s (back-off): meanwhile no worker is alive and a job waits
        body = wait_for(degraded, 3, "/health to say degraded", step=0.05)
        assert body["workers"]["alive"] == 0 and body["jobs_waiting"] >= 1, body
        assert "no job worker is alive" in body["detail"]
        assert client.get("/health").status_code == 200  # predictions still work
        assert client.get(f"/v1/jobs/{big}").json()["status"] == "running"

        wait_for(
            lambda: client.get("/health").json()["workers"]["alive"] == 1,
            30,
            "the worker's restart",
        )
        [second] = client.app.state.workers.pids()
        assert second != first
        done = poll_job(client, big, timeout=300)
        assert (done["status"], done["rows_done"]) == ("done", 600), done
        assert poll_job(client, small, timeout=120)["status"] == "done"
        health = client.get("/health").json()
        assert health["status"] == "ok"
        assert health["workers"] == {"configured": 1, "alive": 1, "restarts": 1}
        results = client.get(f"/v1/jobs/{big}/results").text
    rows = pd.read_csv(io.StringIO(results), dtype=str, keep_default_na=False)
    assert rows["smiles"].tolist() == smiles  # every row once, in input order
    engine = make_engine(db_url)
    try:
        assert store.get_job(engine, big).attempts == 2  # taken over after its lease expired
    finally:
        engine.dispose()
    messages = [r.getMessage() for r in caplog.records if r.name == "api.workers"]
    assert any(
        f"job worker {first} died (killed by SIGKILL)" in m and "restarting it in 3.0 s" in m
        for m in messages
    ), messages
    assert f"restarted job worker: now {second}" in messages


class DyingWorkers(WorkerSupervisor):
    """Workers that exit at once with status 3 (a worker that cannot start)."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", "raise SystemExit(3)"]


def test_a_worker_that_keeps_dying_is_restarted_with_a_growing_back_off(
    model_dir, tmp_path, caplog
):
    settings = job_settings(
        model_dir, f"sqlite:///{tmp_path / 'jobs.sqlite'}", tmp_path, job_workers=1,
        job_worker_backoff_s=0.2,
    )  # fmt: skip
    supervisor = DyingWorkers(settings)
    with caplog.at_level(logging.INFO, logger="api.workers"):
        supervisor.start()
        try:
            wait_for(lambda: supervisor.state().restarts >= 3, 30, "three restarts")
        finally:
            supervisor.stop()
    died = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    waits = [m.split("restarting it in ")[1] for m in died[:3]]
    assert waits == ["0.2 s", "0.4 s", "0.8 s"], died
    assert all("(exit status 3)" in m for m in died)
    state = supervisor.state()
    assert (state.configured, state.alive) == (1, 0)
    time.sleep(1)
    assert supervisor.state().restarts == state.restarts  # stopped: no more restarts
