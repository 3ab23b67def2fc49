"""Service load: requests/s and latency percentiles of ``POST /v1/predict`` against a real uvicorn.

Starts ``uvicorn api.main:app`` on 127.0.0.1 (one process, ``MOLPROP_MODEL_DIR`` holding the
ESOL ESA model trained by ``benchmarks.accuracy`` as ``solubility``), waits for ``/health``, then
for each request size (1 and 100 SMILES, HIV molecules) and each concurrency (1, 8, 32 client
threads, each with its own keep-alive connection) sends requests back to back for
``--seconds`` seconds. The load generator shares the machine's cores with the server.

Usage: ``python -m benchmarks.service_load --seconds 15``
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import pandas as pd

from benchmarks.common import REPO, VENV_BIN, WORK, save_result, thread_env

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_dir():
    """A model directory with the accuracy run's ESOL artifact served as ``solubility``."""
    root = WORK / "service_models"
    root.mkdir(parents=True, exist_ok=True)
    link = root / "solubility"
    if not link.exists():
        link.symlink_to(WORK / "accuracy" / "ESOL_seed0_molprop_esa")
    return root


def start_server(port: int, threads: int) -> subprocess.Popen:
    env = {**os.environ, **thread_env(threads), "MOLPROP_MODEL_DIR": str(model_dir())}
    log_file = open(WORK / "service_uvicorn.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            str(VENV_BIN / "uvicorn"),
            "api.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(url: str, timeout: float = 180.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise RuntimeError(f"service at {url} not ready after {timeout} s")


def load(url: str, smiles: list[str], per_request: int, clients: int, seconds: float) -> dict:
    """``clients`` threads post ``per_request`` SMILES back to back until ``seconds`` pass."""
    import httpx

    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        rng = np.random.default_rng(k)
        with httpx.Client(base_url=url, timeout=120) as http:
            while time.monotonic() < stop:
                batch = rng.choice(smiles, per_request, replace=False).tolist()
                t0 = time.perf_counter()
                r = http.post("/v1/predict", json={"model": "solubility", "smiles": batch})
                latencies[k].append(time.perf_counter() - t0)
                errors[k] += r.status_code != 200

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    lat = np.concatenate([np.asarray(x) for x in latencies]) * 1000
    return {
        "smiles_per_request": per_request,
        "clients": clients,
        "requests": int(lat.size),
        "errors": int(sum(errors)),
        "seconds": round(elapsed, 1),
        "requests_per_s": round(lat.size / elapsed, 2),
        "molecules_per_s": round(lat.size * per_request / elapsed, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 1),
        "p95_ms": round(float(np.percentile(lat, 95)), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=15.0, help="per (size, clients) point")
    p.add_argument("--clients", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--sizes", nargs="+", type=int, default=[1, 100])
    p.add_argument("--threads", type=int, default=1, help="OMP threads of the server")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not (REPO / "api" / "main.py").exists():
        save_result("service_load", {"status": "not run: api/main.py does not exist"})
        return 0
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"].head(2000).tolist()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port, args.threads)
    points = []
    try:
        wait_ready(url)
        load(url, smiles, 1, 1, 2.0)  # warm-up
        for size in args.sizes:
            for clients in args.clients:
                point = load(url, smiles, size, clients, args.seconds)
                log.info("%s", point)
                points.append(point)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    save_result(
        "service_load",
        {
            "status": "ok",
            "server": "uvicorn api.main:app, 1 process",
            "server_threads": args.threads,
            "points": points,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
