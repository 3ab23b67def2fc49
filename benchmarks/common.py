"""Shared benchmark plumbing: paths, dataset specs, timed subprocesses with peak RSS, machine facts."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
WORK = Path(os.environ.get("MOLPROP_BENCH_WORK", "/tmp/molprop_bench"))
RESULTS = BENCH / "results"
PLOTS = BENCH / "plots"
VENV_BIN = Path(sys.executable).parent
SHIMS = BENCH / "_shims"


@dataclass(frozen=True)
class DatasetSpec:
    """One MoleculeNet table: file under data/moleculenet, columns, task type, headline metrics."""

    name: str
    file: str
    smiles_column: str
    target_column: str
    task_type: str

    @property
    def path(self) -> Path:
        return REPO / "data" / "moleculenet" / self.file

    @property
    def metrics(self) -> tuple[str, str]:
        return ("rmse", "r2") if self.task_type == "regression" else ("mcc", "roc_auc")


DATASETS: dict[str, DatasetSpec] = {
    "ESOL": DatasetSpec(
        "ESOL", "ESOL.csv.gz", "smiles", "measured log solubility in mols per litre", "regression"
    ),
    "FreeSolv": DatasetSpec("FreeSolv", "FreeSolv.csv.gz", "smiles", "expt", "regression"),
    "Lipophilicity": DatasetSpec(
        "Lipophilicity", "Lipophilicity.csv.gz", "smiles", "exp", "regression"
    ),
    "BBBP": DatasetSpec("BBBP", "bbbp.csv.gz", "smiles", "p_np", "classification"),
    "BACE": DatasetSpec("BACE", "bace.csv.gz", "mol", "Class", "classification"),
}


@dataclass(frozen=True)
class ProcessResult:
    """A finished subprocess: exit code, wall seconds, peak RSS (MiB) of it and its children,
    CPU seconds (user + system, it and its waited-for children: robust to machine load)."""

    returncode: int
    seconds: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    cpu_seconds: float = float("nan")


def run_process(
    cmd: list[str],
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    cwd: Path = REPO,
) -> ProcessResult:
    """Run ``cmd``; peak RSS comes from ``wait4``'s rusage (max over the process and the
    descendants it waited for), so each measurement covers exactly one whole process."""
    full_env = {**os.environ, **(env or {})}
    out_path = WORK / "logs" / f"proc_{os.getpid()}_{time.monotonic_ns()}"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{out_path}.out", "w") as fo, open(f"{out_path}.err", "w") as fe:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=full_env, cwd=cwd, stdout=fo, stderr=fe)
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ProcessResult(
        proc.returncode,
        seconds,
        usage.ru_maxrss / 1024.0,
        Path(f"{out_path}.out").read_text(),
        Path(f"{out_path}.err").read_text(),
        usage.ru_utime + usage.ru_stime,
    )


def chemprop_env(threads: int) -> dict[str, str]:
    """Environment for chemprop subprocesses (thread caps + the cuik_molmaker shim, see _shims)."""
    path = os.environ.get("PYTHONPATH", "")
    return {**thread_env(threads), "PYTHONPATH": f"{SHIMS}:{path}" if path else str(SHIMS)}


def thread_env(threads: int) -> dict[str, str]:
    n = str(threads)
    return {
        "OMP_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "OPENBLAS_NUM_THREADS": n,
        "MOLPROP_NO_PROGRESS": "1",
    }


def package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def machine_facts() -> dict[str, Any]:
    """CPU model, cores, memory, load, OS, Python and package versions."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    packages = [
        "molprop",
        "torch",
        "torch_geometric",
        "chemprop",
        "lightning",
        "rdkit",
        "numpy",
        "pandas",
        "fastapi",
        "uvicorn",
    ]
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "memory_gb": round(mem_gb, 1),
        "load_avg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: package_version(p) for p in packages},
        "time_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def save_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine_facts(), **payload}, indent=2, default=str))
    return path


def load_result(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
