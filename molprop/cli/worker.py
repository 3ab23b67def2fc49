"""``molprop worker``: claim and run the service's jobs (predict and fine-tune) from the job
database (``MOLPROP_DATABASE_URL``, else the SQLite file under ``MOLPROP_DATA_DIR``). Run as many
as you like, on as many machines as share the database (PostgreSQL for several machines)."""

from __future__ import annotations

import argparse


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="run the service's jobs", description=__doc__)
    p.add_argument(
        "--database-url", default=None, help="SQLAlchemy URL (default: $MOLPROP_DATABASE_URL)"
    )
    p.add_argument("--data-dir", default=None, help="default: $MOLPROP_DATA_DIR")
    p.add_argument(
        "--model-dir",
        default=None,
        help="models looked up here first (default: $MOLPROP_MODEL_DIR, then the shipped ones)",
    )
    p.add_argument(
        "--lease",
        type=float,
        default=30.0,
        help="seconds a job stays claimed without a heartbeat; a killed worker's job is "
        "re-claimed after it (default 30)",
    )
    p.add_argument("--poll", type=float, default=1.0, help="seconds between claims when idle")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--num-workers", type=int, default=0, help="featurisation processes")
    p.add_argument("--exit-when-idle", action="store_true", help="stop when the queue is empty")
    p.add_argument("--max-jobs", type=int, default=None, help="stop after this many jobs")
    p.add_argument(
        "--parent-pid", type=int, default=None, help="exit when this process is gone (internal)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from molprop.cli.extras import require_extra
    from molprop.errors import ConfigError

    require_extra("service", "molprop worker", ("sqlalchemy", "alembic"))
    from molprop.jobs import Worker, WorkerConfig

    if args.lease <= 0 or args.poll <= 0 or args.batch_size < 1 or args.num_workers < 0:
        raise ConfigError("--lease and --poll must be > 0, --batch-size >= 1, --num-workers >= 0")
    worker = Worker(
        WorkerConfig(
            database_url=args.database_url,
            data_dir=Path(args.data_dir) if args.data_dir else None,
            model_dir=Path(args.model_dir) if args.model_dir else None,
            lease_s=args.lease,
            poll_s=args.poll,
            batch_size=args.batch_size,
            num_workers=args.num_workers,
            exit_when_idle=args.exit_when_idle,
            max_jobs=args.max_jobs,
            parent_pid=args.parent_pid,
        )
    )
    worker.run()
    return 0
