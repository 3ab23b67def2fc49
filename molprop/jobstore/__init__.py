"""Persistent jobs: the database both the service and the workers use (SQLAlchemy 2 + Alembic).

* :mod:`~molprop.jobstore.db` — the database URL (``MOLPROP_DATABASE_URL``, else an SQLite file
  under ``MOLPROP_DATA_DIR``), engines for SQLite / PostgreSQL, migrations at start-up;
* :mod:`~molprop.jobstore.schema` — the tables (jobs, their input and result chunks, models
  made by fine-tune jobs);
* :mod:`~molprop.jobstore.inputs` — a job's input rows from a JSON list or an uploaded table;
* :mod:`~molprop.jobstore.options` — each job kind's typed options (the one home of their
  defaults), stored as JSON with the job;
* :mod:`~molprop.jobstore.store` — submit / read / cancel (the service) and claim / heartbeat /
  commit a chunk / finish (the workers, :mod:`molprop.jobs`).

No model code lives here (the service may import it; the worker that runs jobs may not be
imported by the service).
"""

from molprop.jobstore.db import database_url, make_engine, migrate
from molprop.jobstore.inputs import JobInput
from molprop.jobstore.options import FinetuneOptions, JobOptions, PredictOptions
from molprop.jobstore.store import (
    FINAL_STATUSES,
    JOB_STATUSES,
    JobLost,
    JobRecord,
    JobStoreError,
)

__all__ = [
    "FINAL_STATUSES",
    "JOB_STATUSES",
    "FinetuneOptions",
    "JobInput",
    "JobLost",
    "JobOptions",
    "JobRecord",
    "JobStoreError",
    "PredictOptions",
    "database_url",
    "make_engine",
    "migrate",
]
