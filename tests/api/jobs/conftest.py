"""Fixtures of the job tests: a throw-away PostgreSQL server for the session, one fresh job
database per test on SQLite and on PostgreSQL, the app on it (TestClient, no worker)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from molprop.jobstore import make_engine, migrate
from tests.api.jobs.helpers import BACKENDS, job_settings, postgres_server


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def new_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty job database on the test's backend: an SQLite file, or a new PostgreSQL
    database on the session's server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.sqlite'}"
    import psycopg

    base = request.getfixturevalue("pg_url")
    name = f"jobs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated job database: an SQLite file, or a new PostgreSQL database."""
    url = new_database(request, tmp_path)
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    yield url


@pytest.fixture(params=BACKENDS)
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh job database without any table (not migrated), on SQLite or PostgreSQL."""
    return new_database(request, tmp_path)


@pytest.fixture
def jobs_client(model_dir: Path, db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    """The app on ``db_url`` (no worker processes: tests run workers themselves)."""
    with TestClient(create_app(job_settings(model_dir, db_url, tmp_path / "data"))) as client:
        yield client
