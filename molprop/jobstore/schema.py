"""The job tables (SQLAlchemy Core). Alembic revisions in ``migrations/versions`` create them;
a change here needs a new revision (``tests/unit/jobstore`` compares the two).

* ``jobs`` — one row per job: kind (``predict`` / ``finetune``), model, status, progress
  (``rows_done`` of ``rows_total``), timestamps, error, options (JSON), the worker's claim and
  lease (``claim``, ``lease_expires``: epoch seconds), attempts, and the ``owner``: the name of
  the API key that submitted it (null without keys, the local single-user service), and
  the ``report`` (JSON) of a finished fine-tune job: held-out metrics, baselines, verdict,
  whether its model was published.
* ``job_chunks`` — a predict job's input, cut into chunks at submission (``input``: JSON
  ``[[field, ...], ...]``), and each chunk's result rows as CSV records without the header
  (``result``: null until the chunk is done). A chunk's result and the job's progress are
  written in one transaction, so a killed worker leaves whole chunks only.
* ``job_models`` / ``job_model_files`` — artifacts written by fine-tune jobs, stored in the
  database (every API process and worker sees them, on any machine), served by name.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("model", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("rows_total", Integer, nullable=False),
    Column("rows_done", Integer, nullable=False),
    Column("chunks_total", Integer, nullable=False),
    Column("options", Text, nullable=False),
    Column("input_columns", Text, nullable=False),
    Column("result_header", Text, nullable=True),
    Column("payload", LargeBinary, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=True),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("error", Text, nullable=True),
    Column("claim", String(64), nullable=True),
    Column("lease_expires", Float, nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("owner", String(64), nullable=True),
    Column("report", Text, nullable=True),
    Index("ix_jobs_status_created", "status", "created_at"),
    Index("ix_jobs_owner_created", "owner", "created_at"),
)

job_chunks = Table(
    "job_chunks",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("start_row", Integer, nullable=False),
    Column("n_rows", Integer, nullable=False),
    Column("input", Text, nullable=False),
    Column("result", Text, nullable=True),
)

job_models = Table(
    "job_models",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

job_model_files = Table(
    "job_model_files",
    metadata,
    Column(
        "name", String(200), ForeignKey("job_models.name", ondelete="CASCADE"), primary_key=True
    ),
    Column("path", String(500), primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

__all__ = ["job_chunks", "job_model_files", "job_models", "jobs", "metadata"]
