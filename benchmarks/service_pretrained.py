"""Latency and throughput of the service on the *shipped* models.

Starts ``uvicorn api.main:app`` on a free 127.0.0.1 port with ``MOLPROP_MODEL_DIR=pretrained``,
then, with one client on a keep-alive connection (request timing from
``benchmarks.service_load.load``): single-SMILES requests for ``--seconds`` seconds (p50/p95
latency) and 1,000-SMILES requests for ``--seconds`` seconds (molecules/s). SMILES are drawn
from the Lipophilicity set (drug-like molecules). Prints one JSON object.

Usage: ``OMP_NUM_THREADS=1 python -m benchmarks.service_pretrained --seconds 20``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

import pandas as pd

from benchmarks.service_load import REPO, free_port, load, wait_ready


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args(argv)
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "lipo_chemprop.csv.gz")["smiles"].tolist()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MOLPROP_MODEL_DIR": str(REPO / "pretrained")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
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
        start_new_session=True,
    )
    try:
        wait_ready(url)
        load(url, smiles, 1, 1, 2.0)  # warm-up
        single = load(url, smiles, 1, 1, args.seconds)
        batch = load(url, smiles, 1000, 1, args.seconds)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    print(
        json.dumps(
            {
                "model": "solubility (3-member ESA ensemble)",
                "omp_threads": os.environ.get("OMP_NUM_THREADS", "default"),
                "single_smiles": single,
                "batch_1000": batch,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
