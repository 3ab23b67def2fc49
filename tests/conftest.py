"""Shared fixtures: repository paths, real datasets, tiny model configurations."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import torch

os.environ.setdefault("MOLPROP_NO_PROGRESS", "1")
# apps built in the test process (TestClient) start no job worker processes and keep their job
# database out of the home directory; real servers (tests.api.conftest.uvicorn_server) start one
os.environ.setdefault("MOLPROP_JOB_WORKERS", "0")
os.environ.setdefault("MOLPROP_DATA_DIR", tempfile.mkdtemp(prefix="molprop-test-data-"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def esol_frame() -> pd.DataFrame:
    """Real ESOL (Delaney) with columns ``smiles`` and ``logp`` (= measured log solubility)."""
    return pd.read_csv(DATA / "moleculenet" / "delaney_chemprop.csv.gz")


@pytest.fixture(scope="session")
def esol_path() -> Path:
    return DATA / "moleculenet" / "delaney_chemprop.csv.gz"
