"""Fixtures for the service tests: tiny real-data artifacts (trained once per session), a
TestClient app over them, and one real uvicorn process on a free 127.0.0.1 port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings
from molprop.artifact import Artifact, CardTexts
from molprop.models.config import TrainConfig
from molprop.training.train import TrainRequest, run_train

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "moleculenet"
TINY_MODEL = {"hidden_dim": 16, "heads": 2, "layers": "MSP", "num_seeds": 4, "head_hidden": 32}

#: mixed valid / invalid inputs used by several tests
VALID = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "ClC(Cl)Cl", "OCC(O)CO"]
INVALID = ["C1CC", "not a smiles", "", "C(C)(C)(C)(C)C"]


def _train_tiny(
    out: Path, data: str, target: str, task_type: str, rows: int, members: int, unit: str
) -> None:
    frame = pd.read_csv(DATA / data, dtype=str, keep_default_na=False).head(rows)
    run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=[target],
            out=out,
            task_type=task_type,
            model=dict(TINY_MODEL),
            train=TrainConfig(epochs=2, batch_size=64, ensemble_size=members),
            units=[unit],
            name=out.name,
            progress=False,
        )
    )
    Artifact(out).write_card(
        CardTexts(
            title=f"tiny test model ({target})",
            data_source=data,
            licence="MIT",
            intended_use="tests only",
        )
    )


ESOL = DATA / "ESOL.csv.gz"
#: the tiny multitask model's targets and units, in output order (a non-ASCII unit on purpose)
MULTITASK_TARGETS = {"measured_logS": "log10(mol/L)", "psa": "Å²"}


def train_multitask(out: Path, scratch: Path) -> None:
    """A tiny two-target regression model (measured log solubility and polar surface area of
    300 real ESOL rows, hidden 16, 2 epochs, 2 members) with a percentile reference over 60
    approved drugs (written through ``scratch``) and a card."""
    from molprop.training.reference import APPROVED_DRUGS, fit_reference

    frame = pd.read_csv(ESOL).head(300)
    frame = frame.rename(
        columns={"measured log solubility in mols per litre": "measured_logS",
                 "Polar Surface Area": "psa"}
    )  # fmt: skip
    run_train(
        TrainRequest(
            data=frame[["smiles", *MULTITASK_TARGETS]].astype(str),
            smiles_column="smiles",
            target_columns=list(MULTITASK_TARGETS),
            out=out,
            split_type="random",
            model=dict(TINY_MODEL),
            train=TrainConfig(epochs=2, batch_size=64, ensemble_size=2),
            units=list(MULTITASK_TARGETS.values()),
            name=out.name,
            progress=False,
        )
    )
    drugs = scratch / "drugs.csv"
    pd.read_csv(APPROVED_DRUGS).head(60).to_csv(drugs, index=False)
    fit_reference(out, drugs, name="60 approved drugs")  # percentiles for both targets
    Artifact(out).write_card(CardTexts(title="tiny multitask test model", data_source="ESOL",
                                       licence="MIT", intended_use="tests only"))  # fmt: skip


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``solubility`` (2-member regression ensemble on 300 ESOL rows) and ``bbb`` (1-member
    classifier on 200 BBBP rows), hidden 16, 2 epochs."""
    root = tmp_path_factory.mktemp("models")
    _train_tiny(
        root / "solubility", "delaney_chemprop.csv.gz", "logp", "regression", 300, 2, "log10(mol/L)"
    )
    _train_tiny(root / "bbb", "bbbp.csv.gz", "p_np", "classification", 200, 1, "probability")
    return root


@pytest.fixture(scope="session")
def settings(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """No job workers here (the job tests in tests/api/jobs start their own); the job
    database in a temporary directory."""
    return Settings(
        model_dir=model_dir,
        max_batch=50,
        max_smiles_length=120,
        max_body_bytes=20_000,
        data_dir=tmp_path_factory.mktemp("service-data"),
        job_workers=0,
    )


@pytest.fixture(scope="session")
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def uvicorn_server(model_dir: Path, log_path: Path, **env: str) -> Iterator[str]:
    """A real ``uvicorn api.main:app`` process on a free 127.0.0.1 port with ``MOLPROP_<KEY>``
    set from ``env``; yields its base URL once ``/health`` answers 200. Its job database is
    in ``<log_path's folder>/data`` unless ``env`` sets ``data_dir`` or ``database_url``; it
    starts one job worker unless ``env`` sets ``job_workers``."""
    port = free_port()
    full_env = {
        **os.environ,
        "MOLPROP_MODEL_DIR": str(model_dir),
        "MOLPROP_DATA_DIR": str(log_path.parent / "data"),
        "MOLPROP_JOB_WORKERS": "1",
        "OMP_NUM_THREADS": "1",
        **{f"MOLPROP_{k.upper()}": v for k, v in env.items()},
    }
    if "api_key" not in env:
        full_env.pop("MOLPROP_API_KEY", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
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
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited early:\n{log_path.read_text()}")
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn not healthy after 90 s:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def live_server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``uvicorn api.main:app`` process; yields its base URL."""
    log_path = tmp_path_factory.mktemp("uvicorn") / "server.log"
    with uvicorn_server(model_dir, log_path, max_batch="50") as base:
        yield base
