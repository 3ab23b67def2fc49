"""Alembic migrations of the job database (run by :func:`molprop.jobstore.db.migrate`)."""
