"""The Alembic revisions create exactly the tables of ``molprop.jobstore.schema``, migrating
twice is a no-op, and concurrent start-ups (an API and its workers) migrate once."""

from __future__ import annotations

import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from molprop.jobstore import make_engine, migrate
from molprop.jobstore.db import _MIGRATIONS
from molprop.jobstore.schema import metadata


def head_revision() -> str:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return ScriptDirectory.from_config(config).get_current_head()


def test_migrations_match_the_schema(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'jobs.sqlite'}")
    migrate(engine)
    migrate(engine)  # already at head: nothing to do
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert diff == []
    assert version == head_revision()
    assert set(inspect(engine).get_table_names()) == set(metadata.tables) | {"alembic_version"}


def test_a_planted_schema_change_without_a_revision_is_seen(tmp_path):
    from sqlalchemy import Column, Integer

    engine = make_engine(f"sqlite:///{tmp_path / 'jobs.sqlite'}")
    migrate(engine)
    metadata.tables["jobs"].append_column(Column("planted", Integer))
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        table = metadata.tables["jobs"]
        table._columns.remove(table.c.planted)
    assert any(d[0] == "add_column" and d[3].name == "planted" for d in diff), diff


def test_concurrent_start_ups_migrate_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'jobs.sqlite'}"
    code = "import sys; from molprop.jobstore import make_engine, migrate; migrate(make_engine(sys.argv[1]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, url]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
