"""A predict job: its pending chunks from the database through the streaming loop, each chunk's
result rows committed together with the job's progress (:func:`molprop.jobstore.store.commit_chunk`).

The rows are predicted exactly as ``molprop predict`` predicts a file (the same loop, the same
CSV text per chunk), so a job's result CSV equals ``molprop predict``'s output on the same
table. A resumed job (its worker was killed) starts at its first chunk without a result.
Cancellation takes effect between batches: the loop asks the database whether the job is still
held before every batch and row featurised (at most every :data:`CANCEL_POLL_S` seconds).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pandas as pd
from sqlalchemy import Engine

from molprop.errors import PredictionCancelled
from molprop.inference.streaming import predict_chunks
from molprop.io.readers import InputChunk
from molprop.io.sink import csv_header, csv_records
from molprop.jobstore import store
from molprop.jobstore.options import PredictOptions
from molprop.jobstore.store import JobLost, JobRecord

log = logging.getLogger(__name__)

#: most seconds between two looks at the database for a cancel while a chunk is predicted
CANCEL_POLL_S = 0.5


class CancelCheck:
    """``should_stop`` of a running job: true once the job is no longer held by ``token``
    (cancelled, or re-claimed after its lease ran out); asks the database at most every
    ``poll_s`` seconds, and a failed look counts as still held (the commit checks again)."""

    def __init__(self, engine: Engine, job_id: str, token: str, poll_s: float = CANCEL_POLL_S):
        self.engine, self.job_id, self.token, self.poll_s = engine, job_id, token, poll_s
        self._next = 0.0
        self.stopped = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if self.stopped or now < self._next:
            return self.stopped
        self._next = now + self.poll_s
        try:
            self.stopped = not store.holds(self.engine, self.job_id, self.token)
        except Exception:  # a database hiccup: go on, the chunk's commit checks again
            log.exception("job %s: could not check for a cancel", self.job_id)
        return self.stopped


def run_predict_job(
    engine: Engine,
    job: JobRecord,
    options: PredictOptions,
    predictor,
    *,
    lease_s: float,
    batch_size: int = 256,
    num_workers: int = 0,
) -> int:
    """Predict every pending chunk of ``job`` (held by ``job.claim``; ``options``: its
    options) -> rows written.
    Raises :class:`~molprop.jobstore.store.JobLost` when the job is cancelled or re-claimed
    (checked between batches, see :class:`CancelCheck`, and as each chunk is committed)."""
    claim = job.claim
    assert claim is not None
    interval = predictor.interval_level(options.interval)
    index_of: dict[int, int] = {}
    done = job.rows_done
    start = time.perf_counter()

    def chunks() -> Iterator[InputChunk]:
        for idx, first_row, rows in store.pending_chunks(engine, job.id):
            index_of[first_row] = idx
            yield InputChunk(first_row, pd.DataFrame(rows, columns=job.input_columns, dtype=str))

    def write(chunk: InputChunk, out: pd.DataFrame) -> None:
        nonlocal done
        store.commit_chunk(
            engine,
            job.id,
            claim,
            index_of.pop(chunk.start),
            len(out),
            csv_header(out),
            csv_records(out),
            lease_s,
        )
        done += len(out)
        rate = (done - job.rows_done) / max(time.perf_counter() - start, 1e-9)
        log.info("job %s: %d / %d rows (%.0f molecules/s)", job.id, done, job.rows_total, rate)

    try:
        written, status = predict_chunks(
            predictor,
            chunks(),
            options.smiles_column,
            write,
            batch_size=batch_size,
            num_workers=num_workers,
            interval=interval,
            should_stop=CancelCheck(engine, job.id, claim),
        )
    except PredictionCancelled as exc:
        raise JobLost(f"job {job.id} is no longer held by this worker ({exc})") from exc
    log.info("job %s: predicted %d rows (%s)", job.id, written, dict(status))
    return written


__all__ = ["CANCEL_POLL_S", "CancelCheck", "run_predict_job"]
