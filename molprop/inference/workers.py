"""Worker processes that answer slices of a list, results in input order: what the featurising
pool (:mod:`molprop.inference.pool`) and the panel's pool (:mod:`molprop.inference.panel_pool`)
share.

A :class:`WorkerPool` spawns ``num_workers`` processes (none for 0: the caller works in its
own process), each set up once by an initializer with ``OMP_NUM_THREADS=1`` unless the
environment sets it; :meth:`WorkerPool.submit_slices` cuts a list into two slices per worker (a
slow slice delays less) and returns one future per slice, in order, so that their results
concatenate to one answer per row.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any, TypeVar

_Pool = TypeVar("_Pool", bound="WorkerPool")


def _start_worker(initializer: Callable[..., None], args: tuple[Any, ...]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    initializer(*args)


class WorkerPool:
    """``num_workers`` spawned processes, each set up by ``initializer(*initargs)`` (a
    module-level function: it is sent to the process); 0 workers: no process, :attr:`executor`
    is None and the subclass answers in this process. A context manager: leaving it (or
    :meth:`close`) waits for the submitted work and stops the processes."""

    def __init__(
        self, num_workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]
    ) -> None:
        self.num_workers = int(num_workers)
        self.executor: ProcessPoolExecutor | None = None
        if self.num_workers > 0:
            self.executor = ProcessPoolExecutor(
                self.num_workers,
                mp_context=get_context("spawn"),
                initializer=_start_worker,
                initargs=(initializer, initargs),
            )

    def submit_slices(
        self, work: Callable[..., Any], rows: Sequence[Any], *args: Any
    ) -> list[Future]:
        """``work(slice, *args)`` in the workers over two slices of ``rows`` per worker: one
        future per slice, in the rows' order (none for no rows)."""
        if self.executor is None:
            raise RuntimeError("a pool without workers answers in its own process")
        step = -(-len(rows) // (2 * self.num_workers)) or 1
        return [
            self.executor.submit(work, rows[i : i + step], *args) for i in range(0, len(rows), step)
        ]

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self: _Pool) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["WorkerPool"]
