"""Jobs in the database: what the service does (submit, read, cancel, stream results) and what
workers do (claim, heartbeat, commit a chunk, finish, fail, store a fine-tuned model).

A worker holds a job through its *claim* (a random token written on the job) and a *lease*
(``lease_expires``, epoch seconds), which its heartbeat extends. A job is claimable when it is
``queued``, or ``running`` with an expired lease (its worker was killed): the new worker
continues with the first chunk without a result. Every write a worker makes checks its claim
and ``status = 'running'`` in the same statement, so a cancelled job, or one another worker
has re-claimed, is never written by the old worker (:class:`JobLost`); a chunk's result, the
job's progress and its lease are one transaction, so no row is ever missing or written twice.

Claims are atomic: PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED`` (concurrent workers take
different jobs without waiting); SQLite serialises writers (``BEGIN IMMEDIATE``, see
:mod:`molprop.jobstore.db`) and the ``UPDATE`` re-checks the job's status.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal, get_args, overload

from sqlalchemy import Engine, and_, delete, func, insert, or_, select, update

from molprop.errors import MolpropError
from molprop.jobstore.inputs import JobInput
from molprop.jobstore.options import (
    KINDS,
    FinetuneOptions,
    JobKind,
    JobOptions,
    PredictOptions,
    options_from_json,
)
from molprop.jobstore.schema import job_chunks, job_model_files, job_models, jobs

JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
JOB_STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)
QUEUED, RUNNING, DONE, FAILED, CANCELLED = JOB_STATUSES
FINAL_STATUSES: frozenset[str] = frozenset({DONE, FAILED, CANCELLED})
#: a job whose workers died this many times fails instead of being claimed again
MAX_ATTEMPTS = 10


class JobStoreError(MolpropError):
    """A job cannot be stored or changed as asked."""


class JobLost(JobStoreError):
    """The worker no longer holds the job: cancelled, or re-claimed after its lease ran out."""


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@overload
def _aware(value: datetime) -> datetime: ...
@overload
def _aware(value: None) -> None: ...
def _aware(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; every time stored here is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class JobRecord:
    """One job as stored (without its input and results); ``options`` is its kind's options
    record (:mod:`molprop.jobstore.options`)."""

    id: str
    kind: JobKind
    model: str
    status: JobStatus
    rows_done: int
    rows_total: int
    chunks_total: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    options: JobOptions
    input_columns: list[str]
    attempts: int
    claim: str | None = None
    owner: str | None = None
    report: dict[str, Any] | None = None

    @classmethod
    def from_row(cls, row: Any) -> JobRecord:
        m = row._mapping
        return cls(
            id=m["id"],
            kind=m["kind"],
            model=m["model"],
            status=m["status"],
            rows_done=m["rows_done"],
            rows_total=m["rows_total"],
            chunks_total=m["chunks_total"],
            created_at=_aware(m["created_at"]),
            started_at=_aware(m["started_at"]),
            finished_at=_aware(m["finished_at"]),
            error=m["error"],
            options=options_from_json(m["kind"], m["options"]),
            input_columns=json.loads(m["input_columns"]),
            attempts=m["attempts"],
            claim=m["claim"],
            owner=m["owner"],
            report=json.loads(m["report"]) if m["report"] else None,
        )


_RECORD_COLUMNS = [c for c in jobs.c if c.name not in ("payload", "result_header")]


# --------------------------------------------------------------------------- the service side


def create_job(
    engine: Engine,
    model: str,
    job_input: JobInput | None,
    options: JobOptions,
    payload: bytes | None = None,
    owner: str | None = None,
) -> JobRecord:
    """Insert a queued job of ``options``' kind and its input chunks in one transaction. A
    predict job has a ``job_input`` (its SMILES column becomes ``options.smiles_column``); a
    fine-tune job has its labelled table as ``payload`` (``options`` say how to read it).
    ``owner``: the name of the API key that submitted it (None: no keys)."""
    job_id = uuid.uuid4().hex
    chunks = job_input.chunks if job_input is not None else []
    if isinstance(options, PredictOptions) and job_input is not None:
        options = replace(options, smiles_column=job_input.smiles_column)
    values = {
        "id": job_id,
        "kind": options.kind,
        "model": model,
        "status": QUEUED,
        "rows_total": job_input.rows_total if job_input is not None else 0,
        "rows_done": 0,
        "chunks_total": len(chunks),
        "options": options.to_json(),
        "input_columns": json.dumps(job_input.columns if job_input is not None else []),
        "payload": payload,
        "created_at": utcnow(),
        "attempts": 0,
        "owner": owner,
    }
    with engine.begin() as conn:
        conn.execute(insert(jobs).values(**values))
        start = 0
        rows = []
        for idx, chunk in enumerate(chunks):
            rows.append(
                {
                    "job_id": job_id,
                    "idx": idx,
                    "start_row": start,
                    "n_rows": len(chunk),
                    "input": json.dumps(chunk, ensure_ascii=False),
                }
            )
            start += len(chunk)
            if len(rows) >= 64:
                conn.execute(insert(job_chunks), rows)
                rows = []
        if rows:
            conn.execute(insert(job_chunks), rows)
    record = get_job(engine, job_id)
    assert record is not None
    return record


def get_job(engine: Engine, job_id: str) -> JobRecord | None:
    with engine.connect() as conn:
        row = conn.execute(select(*_RECORD_COLUMNS).where(jobs.c.id == job_id)).first()
    return None if row is None else JobRecord.from_row(row)


def list_jobs(engine: Engine, limit: int = 100, owner: str | None = None) -> list[JobRecord]:
    """The newest ``limit`` jobs, newest first; only ``owner``'s when given (None: all)."""
    query = select(*_RECORD_COLUMNS)
    if owner is not None:
        query = query.where(jobs.c.owner == owner)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(jobs.c.created_at.desc()).limit(limit)).all()
    return [JobRecord.from_row(r) for r in rows]


def count_waiting(engine: Engine) -> int:
    """Jobs a worker could claim now: queued, or running with an expired lease (their worker
    died)."""
    waiting = or_(
        jobs.c.status == QUEUED,
        and_(jobs.c.status == RUNNING, jobs.c.lease_expires < time.time()),
    )
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(jobs).where(waiting)).scalar() or 0


def cancel_job(engine: Engine, job_id: str) -> JobRecord | None:
    """Mark a queued or running job ``cancelled`` (a running job's worker stops at its next
    batch, nothing more is written); a finished job is left as it is. None if there is no
    such job."""
    with engine.begin() as conn:
        conn.execute(
            update(jobs)
            .where(jobs.c.id == job_id, jobs.c.status.in_([QUEUED, RUNNING]))
            .values(status=CANCELLED, finished_at=utcnow(), claim=None, lease_expires=None)
        )
    return get_job(engine, job_id)


def pending_model_names(engine: Engine) -> set[str]:
    """Model names that queued or running fine-tune jobs will create."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(jobs.c.options).where(
                jobs.c.kind == FinetuneOptions.kind, jobs.c.status.in_([QUEUED, RUNNING])
            )
        ).all()
    return {FinetuneOptions.from_json(text).name for (text,) in rows}


def iter_results(engine: Engine, job_id: str) -> Iterator[str]:
    """A done predict job's result CSV: the header line, then each chunk's records, in input
    order, read one chunk per query (memory: one chunk)."""
    with engine.connect() as conn:
        header = conn.execute(select(jobs.c.result_header).where(jobs.c.id == job_id)).scalar()
        total = conn.execute(select(jobs.c.chunks_total).where(jobs.c.id == job_id)).scalar()
    if header is None:
        return
    yield header + "\n"
    for idx in range(total or 0):
        with engine.connect() as conn:
            body = conn.execute(
                select(job_chunks.c.result).where(
                    job_chunks.c.job_id == job_id, job_chunks.c.idx == idx
                )
            ).scalar()
        if body is None:
            raise JobStoreError(f"job {job_id}: chunk {idx} has no result")
        yield body


# --------------------------------------------------------------------------- the worker side


def claim_job(
    engine: Engine, lease_s: float, kinds: tuple[JobKind, ...] = KINDS
) -> JobRecord | None:
    """Take the oldest claimable job (queued, or running with an expired lease) -> the job
    with a new claim token, or None when there is none. A job already tried
    :data:`MAX_ATTEMPTS` times fails instead."""
    token = uuid.uuid4().hex
    while True:
        now = time.time()
        claimable = and_(
            jobs.c.kind.in_(kinds),
            or_(
                jobs.c.status == QUEUED,
                and_(jobs.c.status == RUNNING, jobs.c.lease_expires < now),
            ),
        )
        with engine.begin() as conn:
            query = select(jobs.c.id, jobs.c.attempts).where(claimable)
            query = query.order_by(jobs.c.created_at, jobs.c.id).limit(1)
            if engine.dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            row = conn.execute(query).first()
            if row is None:
                return None
            job_id, attempts = row
            if attempts >= MAX_ATTEMPTS:
                conn.execute(
                    update(jobs)
                    .where(jobs.c.id == job_id, claimable)
                    .values(
                        status=FAILED,
                        finished_at=utcnow(),
                        claim=None,
                        error=f"stopped after {attempts} attempts: its workers died",
                    )
                )
                continue
            claimed = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, claimable)
                .values(
                    status=RUNNING,
                    claim=token,
                    lease_expires=now + lease_s,
                    attempts=jobs.c.attempts + 1,
                    started_at=func.coalesce(jobs.c.started_at, utcnow()),
                )
            ).rowcount
        if claimed == 1:
            record = get_job(engine, job_id)
            assert record is not None
            return record


def _held(job_id: str, token: str):
    return and_(jobs.c.id == job_id, jobs.c.claim == token, jobs.c.status == RUNNING)


def heartbeat(engine: Engine, job_id: str, token: str, lease_s: float) -> bool:
    """Extend the lease; False when the job is no longer held (cancelled, re-claimed)."""
    with engine.begin() as conn:
        n = conn.execute(
            update(jobs).where(_held(job_id, token)).values(lease_expires=time.time() + lease_s)
        ).rowcount
    return n == 1


def holds(engine: Engine, job_id: str, token: str) -> bool:
    """Whether the claim ``token`` still holds the job (False once cancelled or re-claimed)."""
    with engine.connect() as conn:
        return conn.execute(select(jobs.c.id).where(_held(job_id, token))).first() is not None


def pending_chunks(engine: Engine, job_id: str) -> Iterator[tuple[int, int, list[list[str]]]]:
    """(chunk index, first row, rows) of every chunk without a result, in order, one query
    per chunk (a resumed job starts at its first incomplete chunk)."""
    with engine.connect() as conn:
        todo = conn.execute(
            select(job_chunks.c.idx)
            .where(job_chunks.c.job_id == job_id, job_chunks.c.result.is_(None))
            .order_by(job_chunks.c.idx)
        ).all()
    for (idx,) in todo:
        with engine.connect() as conn:
            start, text = conn.execute(
                select(job_chunks.c.start_row, job_chunks.c.input).where(
                    job_chunks.c.job_id == job_id, job_chunks.c.idx == idx
                )
            ).one()
        yield idx, start, json.loads(text)


def commit_chunk(
    engine: Engine,
    job_id: str,
    token: str,
    idx: int,
    n_rows: int,
    header: str,
    records: str,
    lease_s: float,
) -> None:
    """Store chunk ``idx``'s result ``records`` (CSV without header) and add its rows to the
    job's progress, in one transaction; :class:`JobLost` (nothing written) when the job is no
    longer held, :class:`JobStoreError` when the chunk already has a result or the header
    differs from the job's."""
    with engine.begin() as conn:
        current = conn.execute(select(jobs.c.result_header).where(_held(job_id, token))).first()
        if current is None:
            raise JobLost(f"job {job_id} is no longer held by this worker")
        if current[0] is not None and current[0] != header:
            raise JobStoreError(
                f"job {job_id}: chunk {idx} has columns {header!r}, the job {current[0]!r}"
            )
        n = conn.execute(
            update(jobs)
            .where(_held(job_id, token))
            .values(
                rows_done=jobs.c.rows_done + n_rows,
                result_header=header,
                lease_expires=time.time() + lease_s,
            )
        ).rowcount
        if n != 1:
            raise JobLost(f"job {job_id} is no longer held by this worker")
        n = conn.execute(
            update(job_chunks)
            .where(
                job_chunks.c.job_id == job_id,
                job_chunks.c.idx == idx,
                job_chunks.c.result.is_(None),
            )
            .values(result=records)
        ).rowcount
        if n != 1:
            raise JobStoreError(f"job {job_id}: chunk {idx} already has a result")


def finish_job(engine: Engine, job_id: str, token: str) -> bool:
    """Mark a held job ``done`` (a predict job only once every row has its result)."""
    with engine.begin() as conn:
        n = conn.execute(
            update(jobs)
            .where(
                _held(job_id, token),
                or_(jobs.c.kind != PredictOptions.kind, jobs.c.rows_done == jobs.c.rows_total),
            )
            .values(status=DONE, finished_at=utcnow(), claim=None, lease_expires=None)
        ).rowcount
    return n == 1


def fail_job(engine: Engine, job_id: str, token: str, error: str) -> bool:
    """Mark a held job ``failed`` with ``error``."""
    with engine.begin() as conn:
        n = conn.execute(
            update(jobs)
            .where(_held(job_id, token))
            .values(
                status=FAILED, finished_at=utcnow(), error=error, claim=None, lease_expires=None
            )
        ).rowcount
    return n == 1


def release_job(engine: Engine, job_id: str, token: str) -> bool:
    """Put a held job back in the queue (a worker shutting down); its finished chunks stay,
    so the next worker continues after them. The attempt is not counted."""
    with engine.begin() as conn:
        n = conn.execute(
            update(jobs)
            .where(_held(job_id, token))
            .values(status=QUEUED, claim=None, lease_expires=None, attempts=jobs.c.attempts - 1)
        ).rowcount
    return n == 1


def read_payload(engine: Engine, job_id: str) -> bytes:
    with engine.connect() as conn:
        return conn.execute(select(jobs.c.payload).where(jobs.c.id == job_id)).scalar() or b""


# --------------------------------------------------------------------------- fine-tuned models


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def finish_unpublished(engine: Engine, job_id: str, token: str, report: dict[str, Any]) -> None:
    """Mark a held fine-tune job done with its ``report``, storing no model (its model was
    not published; the report says why). :class:`JobLost` if the job is no longer held."""
    with engine.begin() as conn:
        n = conn.execute(
            update(jobs)
            .where(_held(job_id, token))
            .values(
                status=DONE,
                finished_at=utcnow(),
                claim=None,
                lease_expires=None,
                report=json.dumps(_json_safe(report)),
            )
        ).rowcount
    if n != 1:
        raise JobLost(f"job {job_id} is no longer held by this worker")


def finish_with_model(
    engine: Engine,
    job_id: str,
    token: str,
    name: str,
    files: Mapping[str, bytes],
    report: dict[str, Any] | None = None,
) -> None:
    """Store a model's ``files`` (relative path -> bytes: a packed artifact,
    :meth:`molprop.artifact.Artifact.pack`) as model ``name`` and mark the job done with its
    ``report``, in one transaction (:class:`JobLost` if the job is no longer held;
    :class:`JobStoreError` if the name is taken)."""
    with engine.begin() as conn:
        if conn.execute(select(jobs.c.id).where(_held(job_id, token))).first() is None:
            raise JobLost(f"job {job_id} is no longer held by this worker")
        if conn.execute(select(job_models.c.name).where(job_models.c.name == name)).first():
            raise JobStoreError(f"a model named {name!r} already exists")
        conn.execute(insert(job_models).values(name=name, job_id=job_id, created_at=utcnow()))
        for path, data in files.items():
            conn.execute(insert(job_model_files).values(name=name, path=path, data=data))
        conn.execute(
            update(jobs)
            .where(_held(job_id, token))
            .values(
                status=DONE,
                finished_at=utcnow(),
                claim=None,
                lease_expires=None,
                report=None if report is None else json.dumps(_json_safe(report)),
            )
        )


def delete_model(engine: Engine, name: str) -> str | None:
    """Delete fine-tuned model ``name`` and its files -> the id of the job that made it (None:
    no such model). Its extracted copies (:class:`molprop.artifact.published.PublishedModels`,
    under that id) are left to the caller: each publication extracts to a directory of its own,
    so a later model of the same name never reuses them."""
    with engine.begin() as conn:
        job_id = conn.execute(select(job_models.c.job_id).where(job_models.c.name == name)).scalar()
        conn.execute(delete(job_model_files).where(job_model_files.c.name == name))
        conn.execute(delete(job_models).where(job_models.c.name == name))
    return job_id


def model_names(engine: Engine) -> list[str]:
    """Names of the models fine-tune jobs made."""
    with engine.connect() as conn:
        return sorted(r[0] for r in conn.execute(select(job_models.c.name)).all())


def model_job(engine: Engine, name: str) -> str | None:
    """The id of the job that made the model ``name`` (None: no such model)."""
    with engine.connect() as conn:
        return conn.execute(select(job_models.c.job_id).where(job_models.c.name == name)).scalar()


def model_files(engine: Engine, name: str) -> dict[str, bytes]:
    """Model ``name``'s files as stored by :func:`finish_with_model` (relative path -> bytes,
    in path order; empty: no such model)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(job_model_files.c.path, job_model_files.c.data)
            .where(job_model_files.c.name == name)
            .order_by(job_model_files.c.path)
        ).all()
    return {str(path): bytes(data) for path, data in rows}


__all__ = [
    "CANCELLED",
    "DONE",
    "FAILED",
    "FINAL_STATUSES",
    "JOB_STATUSES",
    "KINDS",
    "QUEUED",
    "RUNNING",
    "JobLost",
    "JobRecord",
    "JobStoreError",
    "cancel_job",
    "claim_job",
    "commit_chunk",
    "count_waiting",
    "create_job",
    "delete_model",
    "fail_job",
    "finish_job",
    "finish_with_model",
    "get_job",
    "heartbeat",
    "holds",
    "iter_results",
    "list_jobs",
    "model_files",
    "model_job",
    "model_names",
    "pending_chunks",
    "pending_model_names",
    "read_payload",
    "release_job",
]
