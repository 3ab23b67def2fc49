"""jobs, their chunks, and models made by fine-tune jobs

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("rows_total", sa.Integer, nullable=False),
        sa.Column("rows_done", sa.Integer, nullable=False),
        sa.Column("chunks_total", sa.Integer, nullable=False),
        sa.Column("options", sa.Text, nullable=False),
        sa.Column("input_columns", sa.Text, nullable=False),
        sa.Column("result_header", sa.Text, nullable=True),
        sa.Column("payload", sa.LargeBinary, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("claim", sa.String(64), nullable=True),
        sa.Column("lease_expires", sa.Float, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
    )
    op.create_index("ix_jobs_status_created", "jobs", ["status", "created_at"])
    op.create_table(
        "job_chunks",
        sa.Column(
            "job_id",
            sa.String(32),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("start_row", sa.Integer, nullable=False),
        sa.Column("n_rows", sa.Integer, nullable=False),
        sa.Column("input", sa.Text, nullable=False),
        sa.Column("result", sa.Text, nullable=True),
    )
    op.create_table(
        "job_models",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column(
            "job_id", sa.String(32), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "job_model_files",
        sa.Column(
            "name",
            sa.String(200),
            sa.ForeignKey("job_models.name", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("path", sa.String(500), primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_model_files")
    op.drop_table("job_models")
    op.drop_table("job_chunks")
    op.drop_index("ix_jobs_status_created", table_name="jobs")
    op.drop_table("jobs")
