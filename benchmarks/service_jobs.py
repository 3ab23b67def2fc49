"""Persistent jobs: throughput of a large job against ``molprop predict``, service latency while
it runs, and no lost / duplicated rows over kill -9 / restart cycles of the worker.

A. Restart test (``--restart-rows`` rows, ``--cycles`` cycles, SQLite and a throw-away
   PostgreSQL server): a predict job with an ``id`` per row is stored; a ``molprop worker``
   process is started, killed with SIGKILL once it has committed at least one more chunk
   (plus a seeded random delay), ``--cycles`` times; a last worker finishes the job. Counted:
   rows lost (ids missing), rows duplicated (ids repeated), rows out of order, and the largest
   difference of a prediction from a one-shot ``molprop predict`` on the same table.
B. Throughput: ``--rows`` HIV SMILES (``data/moleculenet/hiv.csv.gz``, repeated to the size) as
   one CSV; ``molprop predict`` on it (wall time of the process), then the same CSV uploaded to
   a real ``uvicorn api.main:app`` (SQLite, the worker it starts): time from upload to done,
   and the worker's time (``started_at`` -> ``finished_at``). Meanwhile a probe client sends
   ``GET /health`` and a 1-SMILES ``POST /v1/predict`` in turn: p50 / p95 / max latency.

Both with the shipped ``solubility`` model and ``OMP_NUM_THREADS=--threads`` for every process.
Writes ``benchmarks/results/service_jobs.json`` after each part.

Usage: ``python -m benchmarks.service_jobs [--rows 100000] [--threads 1] [--parts restart,throughput]``
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd

from benchmarks.common import REPO, WORK, load_result, save_result
from benchmarks.service_load import free_port

log = logging.getLogger(__name__)
HIV = REPO / "data" / "moleculenet" / "hiv.csv.gz"
MODELS = REPO / "pretrained"
RESULT = "service_jobs"


def hiv_table(rows: int) -> pd.DataFrame:
    smiles = pd.read_csv(HIV)["smiles"].tolist()
    repeated = (smiles * (rows // len(smiles) + 1))[:rows]
    return pd.DataFrame({"id": [f"r{i}" for i in range(rows)], "smiles": repeated})


def env_for(threads: int, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "MOLPROP_NO_PROGRESS": "1",
        "MOLPROP_MODEL_DIR": str(MODELS),
        **extra,
    }


def one_shot(table: Path, out: Path, threads: int, chunk: int) -> float:
    """``molprop predict`` on ``table`` -> wall seconds of the process."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "molprop.cli.main", "predict", "--model", "solubility",
         "--input", str(table), "--output", str(out), "--chunk-size", str(chunk), "--no-progress"],
        cwd=REPO, env=env_for(threads), check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def worker(env: dict[str, str], log_path: Path, *args: str) -> subprocess.Popen:
    with open(log_path, "ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "molprop.cli.main", "worker", "--poll", "0.2", *args],
            cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
        )  # fmt: skip


# ------------------------------------------------------------------------------ A. restart
def restart_cycles(url: str, rows: int, cycles: int, chunk: int, threads: int, seed: int) -> dict:
    from molprop.jobstore import JobInput, PredictOptions, make_engine, migrate, store

    work = WORK / "service_jobs" / f"restart_{url.split(':')[0]}"
    work.mkdir(parents=True, exist_ok=True)
    table = hiv_table(rows)
    engine = make_engine(url)
    migrate(engine)
    job_input = JobInput.from_lists(table["smiles"].tolist(), table["id"].tolist(), chunk, rows)
    job = store.create_job(engine, "solubility", job_input, PredictOptions(interval=0.9))
    env = env_for(threads, MOLPROP_DATABASE_URL=url, MOLPROP_DATA_DIR=str(work))
    rng = random.Random(seed)
    kills = []
    start = time.perf_counter()
    for cycle in range(cycles):
        before = store.get_job(engine, job.id).rows_done
        proc = worker(env, work / "workers.log", "--lease", "3")
        while store.get_job(engine, job.id).rows_done < min(before + chunk, rows):
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 1.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = store.get_job(engine, job.id)
        kills.append({"cycle": cycle, "rows_done_at_kill": state.rows_done, "status": state.status})
        log.info("restart %s cycle %d: killed at %d rows", url[:10], cycle, state.rows_done)
        if state.status == "done":
            break
    proc = worker(env, work / "workers.log", "--lease", "3", "--max-jobs", "1")
    proc.wait(timeout=3600)
    seconds = time.perf_counter() - start
    final = store.get_job(engine, job.id)
    results = pd.read_csv(
        io.StringIO("".join(store.iter_results(engine, job.id))), dtype=str, keep_default_na=False
    )
    expected_path = work / "expected.csv"
    table.to_csv(work / "input.csv", index=False)
    one_shot(work / "input.csv", expected_path, threads, chunk)
    expected = pd.read_csv(expected_path, dtype=str, keep_default_na=False)
    ids = results["id"].tolist()
    want = table["id"].tolist()
    ok = (results["status"] == "ok") & (expected["status"] == "ok") if len(ids) == rows else None
    diff = None
    if ok is not None:
        diff = float(
            np.max(np.abs(results["logp"][ok].astype(float) - expected["logp"][ok].astype(float)))
        )
    engine.dispose()
    return {
        "database": url.split(":")[0],
        "rows": rows,
        "chunk_rows": chunk,
        "cycles": cycles,
        "kills": kills,
        "attempts": final.attempts,
        "status": final.status,
        "rows_lost": len(set(want) - set(ids)),
        "rows_duplicated": len(ids) - len(set(ids)),
        "in_input_order": ids == want,
        "identical_to_one_shot_text": results.equals(expected),
        "max_abs_diff_vs_one_shot": diff,
        "seconds_total": round(seconds, 1),
    }


# --------------------------------------------------------------------------- B. throughput
def probe(base: str, stop: threading.Event, out: dict[str, list[float]]) -> None:
    t0 = time.perf_counter()
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            t = time.perf_counter()
            out["at"].append(t - t0)
            r = client.get(f"{base}/health")
            out["health"].append(time.perf_counter() - t)
            out["health_status"].append(r.status_code)
            t = time.perf_counter()
            r = client.post(f"{base}/v1/predict", json={"model": "solubility", "smiles": ["CCO"]})
            out["predict"].append(time.perf_counter() - t)
            out["predict_status"].append(r.status_code)
            time.sleep(0.2)


def latency(values: list[float]) -> dict[str, float]:
    a = np.asarray(values) * 1000
    return {
        "n": int(a.size),
        "p50_ms": round(float(np.percentile(a, 50)), 1),
        "p95_ms": round(float(np.percentile(a, 95)), 1),
        "max_ms": round(float(a.max()), 1),
    }


def plot_latency(samples: dict[str, list], rows: int) -> Path:
    """Latency of every probe over the job's run, with the job's progress: benchmarks/plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    at = np.asarray(samples["at"][: len(samples["predict"])])
    ax.plot(at, np.asarray(samples["health"][: at.size]) * 1000, ".", ms=2, label="GET /health")
    ax.plot(at, np.asarray(samples["predict"][: at.size]) * 1000, ".", ms=2,
            label="POST /v1/predict (1 SMILES)")  # fmt: skip
    ax.axhline(50, color="C0", lw=0.8, ls="--")
    ax.axhline(200, color="C1", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("seconds since upload")
    ax.set_ylabel("latency (ms)")
    ax.legend(loc="upper left")
    if samples["progress"]:
        t, done = zip(*samples["progress"], strict=True)
        ax2 = ax.twinx()
        ax2.plot(t, np.asarray(done) / rows * 100, color="k", lw=1, label="job rows done")
        ax2.set_ylabel("job progress (%)")
        ax2.set_ylim(0, 100)
    ax.set_title(f"Service latency while a {rows:,}-row job runs")
    fig.tight_layout()
    out = REPO / "benchmarks" / "plots" / "service_jobs.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def throughput(rows: int, threads: int, chunk: int, reuse_oneshot: bool = False) -> dict[str, Any]:
    from benchmarks.service_load import wait_ready

    work = WORK / "service_jobs" / "throughput"
    work.mkdir(parents=True, exist_ok=True)
    table_path = work / f"hiv_{rows}.csv"
    hiv_table(rows)[["smiles"]].to_csv(table_path, index=False)
    oneshot, record = work / "oneshot.csv", work / "oneshot.json"
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    key = {"rows": rows, "threads": threads, "chunk": chunk, "head": head}
    earlier = json.loads(record.read_text()) if record.exists() else {}
    reused_at = None
    if reuse_oneshot and oneshot.exists() and earlier.get("key") == key:
        reused_at = earlier["at"]
        cli_seconds = float(earlier["seconds"])  # same input, settings and commit
        log.info("reusing the one-shot molprop predict of %s: %.1f s", earlier["at"], cli_seconds)
    else:
        log.info("one-shot molprop predict on %d rows", rows)
        cli_seconds = one_shot(table_path, oneshot, threads, chunk)
        log.info("molprop predict: %.1f s", cli_seconds)
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        record.write_text(json.dumps({"key": key, "seconds": cli_seconds, "at": at}))

    data = work / f"data_{int(time.time())}"
    port = free_port()
    env = env_for(
        threads,
        MOLPROP_DATA_DIR=str(data),
        MOLPROP_JOB_WORKERS="1",
        MOLPROP_JOB_CHUNK_ROWS=str(chunk),
    )
    env.pop("MOLPROP_DATABASE_URL", None)
    with open(work / "server.log", "wb") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning"],
            cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    samples: dict[str, list[float]] = {k: [] for k in ("health", "predict")}
    samples |= {"health_status": [], "predict_status": [], "at": [], "progress": []}
    try:
        wait_ready(base)
        time.sleep(15)  # the worker process it started has loaded its modules
        stop = threading.Event()
        prober = threading.Thread(target=probe, args=(base, stop, samples), daemon=True)
        start = time.perf_counter()
        with open(table_path, "rb") as fh:
            r = httpx.post(
                f"{base}/v1/jobs",
                files={"file": (table_path.name, fh, "text/csv")},
                data={"model": "solubility"},
                timeout=600,
            )
        r.raise_for_status()
        submitted = time.perf_counter() - start
        job_id = r.json()["id"]
        prober.start()
        while True:
            state = httpx.get(f"{base}/v1/jobs/{job_id}", timeout=60).json()
            samples["progress"].append((time.perf_counter() - start, state["rows_done"]))
            if state["status"] in ("done", "failed", "cancelled"):
                break
            time.sleep(1)
        job_seconds = time.perf_counter() - start
        stop.set()
        prober.join()
        with httpx.stream("GET", f"{base}/v1/jobs/{job_id}/results", timeout=600) as resp:
            body = b"".join(resp.iter_bytes())
        download = time.perf_counter() - start - job_seconds
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    worker_seconds = (
        pd.Timestamp(state["finished_at"]) - pd.Timestamp(state["started_at"])
    ).total_seconds()
    same = body == (work / "oneshot.csv").read_bytes()
    plot_latency(samples, rows)
    return {
        "rows": rows,
        "chunk_rows": chunk,
        "job_status": state["status"],
        "molprop_predict_seconds": round(cli_seconds, 1),
        "molprop_predict_reused_from": reused_at,
        "job_seconds_upload_to_done": round(job_seconds, 1),
        "job_upload_seconds": round(submitted, 1),
        "job_worker_seconds": round(worker_seconds, 1),
        "download_seconds": round(download, 1),
        "molprop_predict_mol_per_s": round(rows / cli_seconds, 1),
        "job_mol_per_s": round(rows / job_seconds, 1),
        "job_vs_predict": round(cli_seconds / job_seconds, 3),
        "target_within_15_percent": job_seconds <= 1.15 * cli_seconds,
        "results_identical_to_molprop_predict": same,
        "health": latency(samples["health"]),
        "health_errors": sum(s != 200 for s in samples["health_status"]),
        "predict_1_smiles": latency(samples["predict"]),
        "predict_errors": sum(s != 200 for s in samples["predict_status"]),
        "target_health_p95_below_50ms": latency(samples["health"])["p95_ms"] < 50,
        "target_predict_p95_below_200ms": latency(samples["predict"])["p95_ms"] < 200,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--restart-rows", type=int, default=10_000)
    p.add_argument("--cycles", type=int, default=5)
    p.add_argument("--chunk-rows", type=int, default=4096)
    p.add_argument("--restart-chunk-rows", type=int, default=500)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--parts", default="restart,throughput")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--reuse-oneshot",
        action="store_true",
        help="reuse the last one-shot `molprop predict` timing and output when rows, threads, "
        "chunk and git commit are the same (rerunning only the job part)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per probe otherwise
    parts = args.parts.split(",")
    result: dict[str, Any] = {"command": " ".join(sys.argv), "threads": args.threads}
    earlier = load_result(RESULT) or {}
    for part in ("restart", "throughput"):
        if part not in parts and part in earlier:  # a part not rerun keeps its last result
            result[part] = earlier[part]
            result[f"{part}_from"] = earlier.get("machine", {}).get("time_utc")
    load = os.getloadavg()
    result["load_average_at_start"] = [round(x, 2) for x in load]
    if "restart" in parts:
        from tests.api.jobs.helpers import postgres_server

        result["restart"] = []
        sqlite_url = f"sqlite:///{WORK / 'service_jobs' / f'restart_{int(time.time())}.sqlite'}"
        result["restart"].append(
            restart_cycles(sqlite_url, args.restart_rows, args.cycles, args.restart_chunk_rows,
                           args.threads, args.seed)
        )  # fmt: skip
        save_result(RESULT, result)
        with postgres_server() as pg:
            result["restart"].append(
                restart_cycles(pg, args.restart_rows, args.cycles, args.restart_chunk_rows,
                               args.threads, args.seed)
            )  # fmt: skip
        save_result(RESULT, result)
    if "throughput" in parts:
        result["throughput"] = throughput(
            args.rows, args.threads, args.chunk_rows, args.reuse_oneshot
        )
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    path = save_result(RESULT, result)
    log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
