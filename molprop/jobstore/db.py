"""Where the job database is, engines for SQLite and PostgreSQL, and migrations at start-up.

* ``MOLPROP_DATABASE_URL`` (if set): any SQLAlchemy URL of SQLite or PostgreSQL
  (``postgresql://user@host/db`` is driven by psycopg 3);
* else ``sqlite:///$MOLPROP_DATA_DIR/jobs.sqlite``; ``MOLPROP_DATA_DIR`` defaults to
  ``$XDG_DATA_HOME/molprop`` (``~/.local/share/molprop``).

SQLite runs in WAL mode (readers never wait for the writer) and every transaction starts with
``BEGIN IMMEDIATE``: one writer at a time, so a claim (read the oldest queued job, mark it
running) is atomic across processes; a busy database is waited for (60 s), not an error.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

from molprop.errors import ConfigError

log = logging.getLogger(__name__)
# Alembic logs every plugin and step at INFO; the one line worth keeping is ours (migrate)
logging.getLogger("alembic").setLevel(logging.WARNING)

DATABASE_URL_ENV = "MOLPROP_DATABASE_URL"
DATA_DIR_ENV = "MOLPROP_DATA_DIR"
#: key of the PostgreSQL advisory lock that serialises migrations of concurrent processes
_MIGRATION_LOCK = 2_110_021
_MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def data_dir() -> Path:
    """``$MOLPROP_DATA_DIR``, else ``$XDG_DATA_HOME/molprop`` (``~/.local/share/molprop``)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "molprop"


def database_url(url: str | None = None, directory: str | Path | None = None) -> str:
    """``url``, else ``$MOLPROP_DATABASE_URL``, else the SQLite file ``jobs.sqlite`` in
    ``directory`` (default :func:`data_dir`)."""
    url = url or os.environ.get(DATABASE_URL_ENV)
    if url:
        return url
    return f"sqlite:///{Path(directory or data_dir()) / 'jobs.sqlite'}"


def _sqlite_engine(url) -> Engine:
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 60})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a killed process
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_engine(url: str | None = None) -> Engine:
    """An engine for ``url`` (default :func:`database_url`): SQLite or PostgreSQL only."""
    parsed = make_url(database_url(url))
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True)
    raise ConfigError(
        f"{DATABASE_URL_ENV}: unsupported database {backend!r}; use sqlite:///PATH or "
        "postgresql://USER@HOST/DB"
    )


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to the newest Alembic revision (``migrations/versions``; or to
    ``revision``), in one transaction; concurrent processes (an API and its workers starting
    together) wait for each other (SQLite: the write lock; PostgreSQL: an advisory lock)."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    log.info("job database at revision %s (%s)", revision, engine.url.render_as_string())


__all__ = ["DATABASE_URL_ENV", "DATA_DIR_ENV", "data_dir", "database_url", "make_engine", "migrate"]
