"""Streaming ``molprop predict`` at library scale: molecules/s and peak RSS vs rows and workers.

Input: the real HIV SMILES (data/moleculenet/hiv.csv.gz, 41,127 rows) repeated to N rows,
written as CSV.gz. Model: a shipped-size ESA (hidden 64, 4 heads, ``MSMSP S``, 8 seeds; the
pretrained recipes' size), trained 1 epoch on ESOL (weights do not matter for speed).
Each configuration is one ``molprop predict`` subprocess; peak RSS is the largest process
(main or worker) from ``wait4``; CPU seconds are the process and its workers together.

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.scale_predict \
        --runs 20000:1 20000:2 100000:2 100000:1 --out benchmarks/results/scale_predict.json
    # 1M rows: 1 and 2 featurisation workers, and 2 Lightning processes (ROWS:WORKERS:DEVICES)
    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.scale_predict \
        --runs 1000000:1 1000000:2 1000000:0:2 --out benchmarks/results/scale_predict_1m.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
from pathlib import Path

import pandas as pd

from benchmarks.common import REPO, WORK, machine_facts, run_process, thread_env

MODEL_ARGS = ["--hidden-dim", "64", "--heads", "4", "--layers", "MSMSP S", "--num-seeds", "8"]


def make_input(rows: int) -> Path:
    path = WORK / "scale" / f"hiv_x{rows}.csv.gz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"].tolist()
    with gzip.open(path, "wt", compresslevel=1) as fh:
        fh.write("id,smiles\n")
        for i in range(rows):
            fh.write(f"{i},{smiles[i % len(smiles)]}\n")
    return path


def make_model() -> Path:
    out = WORK / "scale" / "model_h64"
    if (out / "config.json").exists():
        return out
    cmd = [
        sys.executable,
        "-m",
        "molprop.cli.main",
        "train",
        "--data",
        str(REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"),
        "--smiles-column",
        "smiles",
        "--target-columns",
        "logp",
        "--out",
        str(out),
        "--epochs",
        "1",
        "--no-progress",
        "--init",
        "none",
        *MODEL_ARGS,
    ]
    res = run_process(cmd, env=thread_env(1))
    if res.returncode:
        raise RuntimeError(res.stderr[-2000:])
    return out


def measure(model: Path, rows: int, workers: int, chunk_size: int, devices: int = 1) -> dict:
    source = make_input(rows)
    output = WORK / "scale" / f"out_{rows}_{workers}_{devices}.csv"
    cmd = [
        sys.executable,
        "-m",
        "molprop.cli.main",
        "predict",
        "--model",
        str(model),
        "--input",
        str(source),
        "--output",
        str(output),
        "--num-workers",
        str(workers),
        "--chunk-size",
        str(chunk_size),
        "--no-progress",
    ]
    if devices > 1:  # Lightning processes (each with its own featurisation workers)
        cmd += ["--devices", str(devices), "--strategy", "ddp"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = run_process(cmd, env=thread_env(1))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode:
        raise RuntimeError(res.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    written = sum(1 for _ in open(output)) - 1
    assert written == rows, (written, rows)
    return {
        "rows": rows,
        "workers": workers,
        "devices": devices,
        "chunk_size": chunk_size,
        "wall_s": round(res.seconds, 1),
        "cpu_s": round(cpu, 1),
        "molecules_per_s_wall": round(rows / res.seconds, 1),
        "molecules_per_cpu_s": round(rows / cpu, 1),
        "peak_rss_mb": round(res.peak_rss_mb, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--runs",
        nargs="+",
        default=["20000:1", "20000:2", "100000:2", "100000:1"],
        help="ROWS:WORKERS[:DEVICES], measured in this order; DEVICES > 1 runs "
        "Lightning's multi-process prediction",
    )
    p.add_argument("--chunk-size", type=int, default=4096)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "scale_predict.json"))
    args = p.parse_args(argv)
    model = make_model()
    results = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for run in args.runs:
        rows, workers, devices = ([int(x) for x in run.split(":")] + [1])[:3]
        results.append(measure(model, rows, workers, args.chunk_size, devices))
        print(json.dumps(results[-1]), flush=True)
        out.write_text(
            json.dumps(
                {"machine": machine_facts(), "model_args": MODEL_ARGS, "results": results}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
