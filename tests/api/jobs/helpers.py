"""Helpers of the job tests: a throw-away PostgreSQL server, the service's settings on a job
database, real ``molprop worker`` processes, waiting, and job inputs from real data (HIV
SMILES with invalid rows mixed in)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from api.settings import Settings
from tests.api.conftest import DATA, REPO, free_port

#: Debian's server binaries (scripts/install-system-deps.sh installs them when missing)
PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
MISSING_PG = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: the job tests run against a real "
    "PostgreSQL server; install it with `sudo scripts/install-system-deps.sh` (Debian: "
    "apt-get install postgresql) or put initdb on PATH"
)
BACKENDS = ["sqlite", "postgresql"]


def pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    dirs = sorted(Path("/").glob(PG_BIN_GLOB.lstrip("/")), key=lambda p: p.parent.name)
    dirs = [d for d in dirs if (d / "initdb").exists() and (d / "pg_ctl").exists()]
    return dirs[-1] if dirs else None


def _server_user() -> str | None:
    """PostgreSQL refuses to run as root: run it as ``postgres`` (or ``nobody``) then."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    pytest.fail("running as root and neither a 'postgres' nor a 'nobody' user exists")


@contextmanager
def postgres_server() -> Iterator[str]:
    """initdb into a temporary directory, start on a free 127.0.0.1 port, yield the URL of
    its ``postgres`` database, stop and delete it at the end."""
    bindir = pg_bin()
    if bindir is None:
        pytest.fail(MISSING_PG)
    root = Path(tempfile.mkdtemp(prefix="molprop-pg-"))
    user = _server_user()
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    prefix = ["runuser", "-u", user, "--"] if user else []
    data, log, port = root / "data", root / "server.log", free_port()

    def run(*args: str) -> None:
        out = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {out.stdout}\n{out.stderr}\n{tail}")

    run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options,
        "start")  # fmt: skip
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def job_settings(model_dir: Path, db_url: str, data: Path, **overrides) -> Settings:
    values = {
        "model_dir": model_dir,
        "data_dir": data,
        "database_url": db_url,
        "job_workers": 0,
        "job_chunk_rows": 16,
        "max_job_rows": 5000,
    }
    return Settings(**{**values, **overrides})


def worker_env(model_dir: Path, db_url: str, data: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MOLPROP_MODEL_DIR": str(model_dir),
        "MOLPROP_DATABASE_URL": db_url,
        "MOLPROP_DATA_DIR": str(data),
        "OMP_NUM_THREADS": "1",
        "MOLPROP_NO_PROGRESS": "1",
    }


def start_worker(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    """A real ``molprop worker`` process (stdout and stderr to ``log``)."""
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "molprop.cli.main", "worker", "--poll", "0.2", *args],
            cwd=REPO,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(predicate, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def hiv_smiles(n: int, invalid_every: int = 0) -> list[str]:
    """``n`` real SMILES (HIV, in file order); every ``invalid_every``-th is made unparsable."""
    frame = pd.read_csv(DATA / "hiv.csv.gz", nrows=n)
    smiles = frame["smiles"].tolist()
    if invalid_every:
        for i in range(invalid_every - 1, n, invalid_every):
            smiles[i] = f"not a smiles {i}"
    return smiles


def poll_job(client, job_id: str, final: bool = True, timeout: float = 120) -> dict:
    """GET the job until it has ended (``final``) -> its JSON."""

    def ended():
        body = client.get(f"/v1/jobs/{job_id}").json()
        return body if body["status"] in ("done", "failed", "cancelled") else None

    return wait_for(ended, timeout, f"job {job_id} to end")
