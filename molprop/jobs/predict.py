"""A predict job: its pending chunks from the database through the streaming loop, each chunk's
result rows committed together with the job's progress (:func:`molprop.jobstore.store.commit_chunk`).

The rows are predicted exactly as ``molprop predict`` predicts a file (the same loop, the same
CSV text per chunk), so a job's result CSV equals ``molprop predict``'s output on the same
table. A resumed job (its worker was killed) starts at its first chunk without a result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pandas as pd
from sqlalchemy import Engine

from molprop.inference.streaming import predict_chunks
from molprop.io.readers import InputChunk
from molprop.io.sink import csv_header, csv_records
from molprop.jobstore import store
from molprop.jobstore.store import JobRecord

log = logging.getLogger(__name__)


def run_predict_job(
    engine: Engine,
    job: JobRecord,
    predictor,
    *,
    lease_s: float,
    batch_size: int = 256,
    num_workers: int = 0,
) -> int:
    """Predict every pending chunk of ``job`` (held by ``job.claim``) -> rows written.
    Raises :class:`~molprop.jobstore.store.JobLost` when the job is cancelled or re-claimed
    (checked as each chunk is committed)."""
    assert job.claim is not None
    smiles_column = job.options.get("smiles_column", "smiles")
    interval = predictor.interval_level(job.options.get("interval"))
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
            job.claim,
            index_of.pop(chunk.start),
            len(out),
            csv_header(out),
            csv_records(out),
            lease_s,
        )
        done += len(out)
        rate = (done - job.rows_done) / max(time.perf_counter() - start, 1e-9)
        log.info("job %s: %d / %d rows (%.0f molecules/s)", job.id, done, job.rows_total, rate)

    written, status = predict_chunks(
        predictor,
        chunks(),
        smiles_column,
        write,
        batch_size=batch_size,
        num_workers=num_workers,
        interval=interval,
    )
    log.info("job %s: predicted %d rows (%s)", job.id, written, dict(status))
    return written


__all__ = ["run_predict_job"]
