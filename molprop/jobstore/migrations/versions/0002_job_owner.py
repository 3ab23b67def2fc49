"""jobs.owner: the name of the API key that submitted a job (null: no keys configured)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("owner", sa.String(64), nullable=True))
    op.create_index("ix_jobs_owner_created", "jobs", ["owner", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_owner_created", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("owner")
