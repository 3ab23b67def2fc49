"""Alembic environment: migrations run on the connection :func:`molprop.jobstore.db.migrate`
passes in (``config.attributes["connection"]``), inside its transaction."""

from __future__ import annotations

from alembic import context

from molprop.jobstore.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
