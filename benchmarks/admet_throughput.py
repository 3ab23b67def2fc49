"""Whole-panel throughput: molprop's ``admet`` panel against ADMET-AI, as whole processes.

The same 10,000 drug-like SMILES (a seeded sample of the molecules of ``data/admet``) go through

* ``molprop predict --model admet`` (every endpoint of the shipped panel with std, interval,
  percentile and domain, plus RDKit physchem and alerts), and
* ADMET-AI's ``admet_predict`` (its 41 endpoints plus physchem, offline from its wheel),

each as one process from start to finish (model loading included), one after the other, with the
same thread limit; once in one process and once with ``--workers`` worker processes for each
(molprop ``--num-workers``, ADMET-AI ``--num_workers``: its data-loader workers). ADMET-AI is not a molprop dependency: install it in its own environment::

    python -m venv ../admetai && ../admetai/bin/pip install torch==2.13.0 admet-ai==2.0.1
    python -m benchmarks.admet_throughput --admet-ai ../admetai/bin/admet_predict [--n 10000]

writes ``benchmarks/results/admet_throughput.json`` (seconds, molecules/s, rows and columns out).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from benchmarks.common import WORK, save_result
from molprop.pretrained_admet import ADMET, endpoint_table


def sample(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` distinct SMILES drawn (seeded) from every endpoint table of ``data/admet``."""
    frames = [
        pd.read_csv(ADMET / f"{name}.csv.gz", usecols=["smiles", "inchikey"])
        for name in endpoint_table().index
    ]
    pool = pd.concat(frames).drop_duplicates("inchikey").reset_index(drop=True)
    return pool.sample(n=min(n, len(pool)), random_state=seed)[["smiles"]].reset_index(drop=True)


def timed(command: list[str], env: dict[str, str], log: Path) -> float:
    start = time.perf_counter()
    with open(log, "w") as fh:
        done = subprocess.run(command, env=env, stdout=fh, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}); see {log}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--admet-ai", required=True, help="ADMET-AI's admet_predict executable")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=2, help="worker processes of the second runs")
    p.add_argument("--work", type=Path, default=WORK / "admet_throughput")
    a = p.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    smiles = a.work / "smiles.csv"
    sample(a.n).to_csv(smiles, index=False)
    threads = str(a.threads)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    env.update({"MOLPROP_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"})
    molprop = [
        sys.executable,
        "-m",
        "molprop.cli.main",
        "predict",
        "--model",
        "admet",
        "--input",
        str(smiles),
        "--smiles-column",
        "smiles",
    ]
    admet_ai = [a.admet_ai, "--data_path", str(smiles), "--smiles_column", "smiles"]
    runs = {}
    for workers in sorted({0, a.workers}):
        tag = f"_workers{workers}" if workers else ""
        runs[f"molprop{tag}"] = [
            *molprop,
            "--num-workers",
            str(workers),
            "--output",
            str(a.work / f"molprop{tag}.csv"),
        ]
        runs[f"admet_ai{tag}"] = [
            *admet_ai,
            "--num_workers",
            str(workers),
            "--save_path",
            str(a.work / f"admet_ai{tag}.csv"),
        ]
    result = {"n": a.n, "threads": a.threads, "workers": a.workers, "tools": {}}
    for name, command in runs.items():
        load_before = os.getloadavg()[0]
        seconds = timed(command, env, a.work / f"{name}.log")
        out = pd.read_csv(a.work / f"{name}.csv", low_memory=False)
        result["tools"][name] = {
            "seconds": round(seconds, 1),
            "molecules_per_s": round(a.n / seconds, 1),
            "rows_out": len(out),
            "columns_out": out.shape[1],
            "load_avg_before": round(load_before, 2),
        }
        print(name, result["tools"][name], flush=True)
    save_result("admet_throughput", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
