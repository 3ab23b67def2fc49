"""Streaming prediction for libraries larger than memory: the loop.

The input is read in chunks (:mod:`molprop.io.readers`: CSV / TSV, optionally compressed; SMI;
SDF as SMILES + properties); each chunk is featurised (optionally by worker processes,
:mod:`molprop.inference.pool`, results kept in input order), predicted and appended to the
output CSV with a single write (:mod:`molprop.io.sink`), so memory is bounded by a few chunks
whatever the file size. Output row i is input row i: every input row gets exactly one output
row with ``status`` and ``error``.

Resume: the rows already in a partial output are kept (a trailing partial record is cut off,
the header is checked) and prediction continues with the first input row that has no output
row, so the finished file has no duplicate and no missing row.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from molprop.artifact.calibration import DEFAULT_LEVEL
from molprop.errors import PredictionCancelled
from molprop.inference.pool import FeaturizerPool
from molprop.io.readers import InputChunk, count_records, iter_chunks
from molprop.io.sink import append_checked, prepare_output, release_freed_memory

log = logging.getLogger(__name__)


@dataclass
class StreamSummary:
    """Result of :func:`predict_stream`."""

    rows_total: int
    rows_resumed: int
    rows_written: int
    status: dict[str, int]
    seconds: float

    @property
    def molecules_per_second(self) -> float:
        return self.rows_written / self.seconds if self.seconds > 0 else float("nan")


#: What :func:`predict_chunks` hands each predicted chunk to (the input chunk, its output rows).
ChunkWriter = Callable[[InputChunk, pd.DataFrame], None]


def predict_chunks(
    predictor,
    chunks: Iterable[InputChunk],
    smiles_column: str,
    write: ChunkWriter,
    *,
    batch_size: int = 256,
    num_workers: int = 0,
    prefetch: int = 2,
    interval: float | None = DEFAULT_LEVEL,
    low_columns: Sequence[str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[int, Counter[str]]:
    """The loop under :func:`predict_stream` and the service's jobs (``molprop.jobs``): each
    chunk of ``chunks`` is featurised (up to ``prefetch`` chunks ahead, in ``num_workers``
    processes), predicted and handed to ``write`` with its output rows (input columns, then
    the predictor's), in input order; ``write`` may raise to stop (the pool is shut down).
    ``interval``: a level already checked by ``predictor.interval_level``. ``low_columns``:
    input columns with the measured low-fidelity labels a transfer model trained on them needs.
    ``should_stop``: asked before each chunk, each row featurised in this process and each
    batch of the model; when it returns true :class:`~molprop.errors.PredictionCancelled` is
    raised (a chunk being predicted is dropped, none is half-written).
    -> (rows written, status counts)."""
    status: Counter[str] = Counter()
    written = 0
    pool = FeaturizerPool(
        predictor.screened, predictor.config.featurizer.to_dict(), num_workers, should_stop
    )

    def check() -> None:
        if should_stop is not None and should_stop():
            raise PredictionCancelled("prediction stopped between chunks")

    pending: deque[tuple[InputChunk, list[Future]]] = deque()

    def finish(chunk: InputChunk, futures: list[Future]) -> None:
        nonlocal written
        check()
        items = chunk.with_failures([item for f in futures for item in f.result()])
        out = predictor.predict_frame(
            chunk.frame,
            smiles_column,
            batch_size,
            items=items,
            interval=interval,
            low_columns=low_columns,
            should_stop=should_stop,
        )
        write(chunk, out)
        written += len(out)
        status.update(out["status"].tolist())
        del out, items
        release_freed_memory()

    with pool:
        for chunk in chunks:
            check()
            pending.append((chunk, pool.submit(chunk.smiles(smiles_column))))
            if len(pending) > prefetch:
                finish(*pending.popleft())
        while pending:
            finish(*pending.popleft())
    return written, status


def predict_stream(
    predictor,
    input_path: str | Path,
    output_path: str | Path,
    smiles_column: str = "smiles",
    *,
    batch_size: int = 256,
    chunk_size: int = 4096,
    num_workers: int = 0,
    resume: bool = False,
    progress: bool = True,
    prefetch: int = 2,
    interval: float | str | None = DEFAULT_LEVEL,
    low_columns: Sequence[str] | None = None,
) -> StreamSummary:
    """Predict every row of ``input_path`` into ``output_path`` (CSV), chunk by chunk.

    Columns: the input columns, then the predictor's columns (targets, ``<target>_std`` for
    ensembles, ``status``, ``error``, ...). Featurisation of up to ``prefetch`` chunks runs
    ahead in the workers while the model predicts the current chunk. ``interval``: level of
    the calibrated ``<target>_low`` / ``<target>_high`` columns (None: none; see
    :meth:`~molprop.inference.Predictor.predict`). ``low_columns``: input columns with the
    measured low-fidelity labels a transfer model trained on them needs (it refuses without).
    """
    level = predictor.interval_level(interval)  # checked before any output is written
    predictor.refuse_without_low(bool(low_columns))  # before any output is written
    output_path = Path(output_path)
    done, header = prepare_output(output_path, resume)
    if done:
        log.info("resuming %s: %d rows already written", output_path, done)
    total = count_records(input_path) if progress else None
    start = time.perf_counter()
    bar = tqdm(
        total=total,
        initial=done,
        unit="mol",
        unit_scale=True,
        desc="predicting",
        disable=not progress,
        smoothing=0.1,
    )

    def write(chunk: InputChunk, out: pd.DataFrame) -> None:
        nonlocal header
        header = append_checked(output_path, out, header)
        bar.update(len(out))

    try:
        chunks = iter_chunks(input_path, smiles_column, chunk_size, skip=done)
        written, status = predict_chunks(
            predictor,
            chunks,
            smiles_column,
            write,
            batch_size=batch_size,
            num_workers=num_workers,
            prefetch=prefetch,
            interval=level,
            low_columns=low_columns,
        )
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    summary = StreamSummary(done + written, done, written, dict(status), seconds)
    log.info(
        "predicted %d rows (%d resumed) in %.1f s: %.0f molecules/s, %s",
        summary.rows_total,
        done,
        seconds,
        summary.molecules_per_second,
        dict(status),
    )
    return summary


__all__ = ["ChunkWriter", "StreamSummary", "predict_chunks", "predict_stream"]
