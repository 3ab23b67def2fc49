"""Jobs with real processes, on SQLite and on PostgreSQL: two ``molprop worker`` processes
racing for jobs (each job claimed and run once), ``kill -9`` of a worker mid-job then a new
worker resuming (result identical to a one-shot ``molprop predict``: no row missing or
duplicated), a real uvicorn service restarted (its jobs kept; the worker it starts runs them),
and a fine-tune job whose model the service then serves by name."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pandas as pd
import pytest

from molprop.jobstore import make_engine, store
from tests.api.conftest import REPO, uvicorn_server
from tests.api.jobs.helpers import hiv_smiles, start_worker, stop, wait_for, worker_env
from tests.api.jobs.test_jobs_lifecycle import run_worker

CLAIMER = """
import sys, time, pathlib
from molprop.jobstore import make_engine, store
engine = make_engine(sys.argv[1])
go = pathlib.Path(sys.argv[2])
pathlib.Path(sys.argv[3]).touch()
while not go.exists():
    time.sleep(0.005)
while (job := store.claim_job(engine, 60)) is not None:
    print(job.id, flush=True)
"""


def submit(client, smiles, ids=None) -> str:
    r = client.post("/v1/jobs", json={"model": "solubility", "smiles": smiles, "ids": ids})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_two_processes_racing_claim_each_job_once(jobs_client, db_url, tmp_path):
    """The atomic claim itself: two processes claim from 40 queued jobs as fast as they can,
    released at the same moment."""
    ids = {submit(jobs_client, ["CCO"]) for _ in range(40)}
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, db_url, str(go), str(tmp_path / f"ready{i}")],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    wait_for(lambda: all(r.exists() for r in ready), 120, "both claimers to start")
    go.touch()
    claimed = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(claimed[0] + claimed[1]) == sorted(ids)  # all claimed, none twice
    assert not set(claimed[0]) & set(claimed[1])


def test_two_workers_run_each_job_exactly_once(jobs_client, db_url, model_dir, tmp_path):
    smiles = hiv_smiles(320, invalid_every=13)
    job_ids = [submit(jobs_client, smiles) for _ in range(6)]
    env = worker_env(model_dir, db_url, tmp_path / "data")
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    workers = [start_worker(env, log, "--exit-when-idle") for log in logs]
    try:
        for proc in workers:
            proc.wait(timeout=240)
    finally:
        for proc in workers:
            stop(proc)
    engine = make_engine(db_url)
    for job_id in job_ids:
        job = store.get_job(engine, job_id)
        assert (job.status, job.rows_done, job.attempts) == ("done", 320, 1)
        rows = pd.read_csv(io.StringIO("".join(store.iter_results(engine, job_id))), dtype=str)
        assert rows["smiles"].tolist() == smiles
    claims = [re.findall(r"job (\w+) \(predict", log.read_text()) for log in logs]
    assert sorted(claims[0] + claims[1]) == sorted(job_ids)
    engine.dispose()


def test_kill_9_mid_job_then_a_new_worker_resumes(jobs_client, db_url, model_dir, tmp_path):
    n = 600
    smiles = hiv_smiles(n, invalid_every=11)
    ids = [f"row{i}" for i in range(n)]
    job_id = submit(jobs_client, smiles, ids)
    env = worker_env(model_dir, db_url, tmp_path / "data")
    first = start_worker(env, tmp_path / "a.log", "--lease", "2")
    try:
        wait_for(
            lambda: jobs_client.get(f"/v1/jobs/{job_id}").json()["rows_done"] >= 32,
            120,
            "the first worker's chunks",
            step=0.05,
        )
    finally:
        stop(first)  # SIGKILL: no clean-up, the job stays claimed until its lease runs out
    killed = jobs_client.get(f"/v1/jobs/{job_id}").json()
    assert killed["status"] == "running", killed
    assert 32 <= killed["rows_done"] < n and killed["rows_done"] % 16 == 0
    second = start_worker(env, tmp_path / "b.log", "--lease", "2", "--max-jobs", "1")
    try:
        assert second.wait(timeout=240) == 0
    finally:
        stop(second)
    done = jobs_client.get(f"/v1/jobs/{job_id}").json()
    assert (done["status"], done["rows_done"]) == ("done", n)
    engine = make_engine(db_url)
    assert store.get_job(engine, job_id).attempts == 2
    engine.dispose()

    source = tmp_path / "input.csv"
    pd.DataFrame({"id": ids, "smiles": smiles}).to_csv(source, index=False)
    out = tmp_path / "oneshot.csv"
    cli = subprocess.run(
        [sys.executable, "-m", "molprop.cli.main", "predict", "--model", str(model_dir / "solubility"),
         "--input", str(source), "--output", str(out), "--no-progress", "--chunk-size", "16"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr[-2000:]
    results = jobs_client.get(f"/v1/jobs/{job_id}/results").text
    assert results == out.read_text()  # every row once, in input order, same values


def test_restarted_service_keeps_its_jobs_and_its_worker_runs_them(model_dir, db_url, tmp_path):
    smiles = hiv_smiles(200, invalid_every=17)
    common = {"database_url": db_url, "job_chunk_rows": "16", "job_lease_s": "5"}
    with uvicorn_server(model_dir, tmp_path / "one.log", job_workers="0", **common) as base:
        r = httpx.post(f"{base}/v1/jobs", json={"model": "solubility", "smiles": smiles})
        assert r.status_code == 202
        job_id = r.json()["id"]
    # the first process is gone; the second starts one worker (as `make serve` does)
    with uvicorn_server(model_dir, tmp_path / "two.log", job_workers="1", **common) as base:

        def done():
            body = httpx.get(f"{base}/v1/jobs/{job_id}").json()
            return body if body["status"] == "done" else None

        job = wait_for(done, 180, "the service's worker to run the job", step=0.3)
        assert (job["rows_done"], job["rows_total"]) == (200, 200)
        with httpx.stream("GET", f"{base}/v1/jobs/{job_id}/results") as r:
            assert r.status_code == 200
            text = "".join(r.iter_text())
    rows = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert rows["smiles"].tolist() == smiles
    planted = rows["smiles"].str.startswith("not a smiles")
    assert planted.sum() == len(smiles) // 17
    assert set(rows["status"][planted]) == {"invalid_input"}
    log = (tmp_path / "two.log").read_text()
    pid = (
        int(re.search(r"started job worker (\d+)", log).group(1)) if "started job" in log else None
    )
    if pid is not None:  # the worker ended with its service
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


@pytest.mark.parametrize("strategy", ["full"])
def test_finetune_job_makes_a_served_model(jobs_client, db_url, model_dir, tmp_path, strategy):
    data = pd.read_csv(REPO / "data/moleculenet/delaney_chemprop.csv.gz").iloc[300:380]
    csv = data[["smiles", "logp"]].rename(columns={"logp": "my assay"}).to_csv(index=False)
    form = {
        "kind": "finetune",
        "model": "solubility",
        "name": "my_assay-v1",
        "target_column": "my assay",
        "epochs": "2",
    }
    r = jobs_client.post("/v1/jobs", files={"file": ("assay.csv", csv.encode())}, data=form)
    assert r.status_code == 202, r.text
    job = r.json()
    assert (job["kind"], job["new_model"]) == ("finetune", "my_assay-v1")
    again = jobs_client.post("/v1/jobs", files={"file": ("assay.csv", csv.encode())}, data=form)
    assert again.status_code == 409  # the name is taken by a pending job
    assert run_worker(db_url, model_dir, tmp_path) == 1
    done = jobs_client.get(f"/v1/jobs/{job['id']}").json()
    assert done["status"] == "done", done
    assert jobs_client.get(f"/v1/jobs/{job['id']}/results").status_code == 409

    def listed():
        return "my_assay-v1" in [m["name"] for m in jobs_client.get("/v1/models").json()]

    wait_for(listed, 30, "the service to serve the fine-tuned model", step=0.5)
    r = jobs_client.post(
        "/v1/predict", json={"model": "my_assay-v1", "smiles": ["CCO", "c1ccccc1O", "C1CC"]}
    )
    assert r.status_code == 200, r.text
    assert [x["status"] for x in r.json()["results"]] == ["ok", "ok", "invalid_input"]
    # and a worker predicts with it too
    job_id = submit_named(jobs_client, "my_assay-v1", ["CCO", "c1ccccc1O"])
    run_worker(db_url, model_dir, tmp_path)
    assert jobs_client.get(f"/v1/jobs/{job_id}").json()["status"] == "done"


def submit_named(client, model: str, smiles: list[str]) -> str:
    r = client.post("/v1/jobs", json={"model": model, "smiles": smiles})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_sigterm_puts_the_job_back_in_the_queue(jobs_client, db_url, model_dir, tmp_path):
    smiles = hiv_smiles(1500)
    job_id = submit(jobs_client, smiles)
    env = worker_env(model_dir, db_url, tmp_path / "data")
    proc = start_worker(env, tmp_path / "w.log")
    try:
        wait_for(
            lambda: jobs_client.get(f"/v1/jobs/{job_id}").json()["rows_done"] >= 16,
            120,
            "the worker's first chunk",
            step=0.05,
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)
    back = jobs_client.get(f"/v1/jobs/{job_id}").json()
    assert back["status"] == "queued" and 16 <= back["rows_done"] < 1500, back
    assert run_worker(db_url, model_dir, tmp_path) == 1
    rows = pd.read_csv(io.StringIO(jobs_client.get(f"/v1/jobs/{job_id}/results").text), dtype=str)
    assert rows["smiles"].tolist() == smiles
