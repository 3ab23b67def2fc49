"""Where model work runs: lanes of worker threads with bounded queues, deadlines and cancellation.

Two lanes: ``small`` (requests of at most ``MOLPROP_SMALL_REQUEST_TOKENS`` tokens, one thread)
and ``large`` (``MOLPROP_INFERENCE_WORKERS`` threads), so a one-molecule request never waits
behind large ones. A lane admits at most ``workers + MOLPROP_MAX_QUEUE`` requests at a time
(more: :class:`QueueFull`, answered 503 with ``Retry-After``). Every request is a :class:`Job`
with a deadline and a cancel flag; the predictor asks ``job.should_stop`` between rows and
batches, and :func:`run_job` sets the flag when the client disconnects or the deadline passes.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from starlette.requests import Request

from molprop.errors import PredictionCancelled

T = TypeVar("T")

#: seconds between checks of the client connection and the deadline while a job runs
POLL_S = 0.1


class QueueFull(Exception):
    """The lane has no room; retry after ``retry_after`` seconds."""

    def __init__(self, lane: str, waiting: int, max_queue: int, retry_after: int) -> None:
        super().__init__(f"{lane} lane: {waiting} requests waiting (limit {max_queue})")
        self.lane, self.waiting, self.max_queue, self.retry_after = (
            lane,
            waiting,
            max_queue,
            retry_after,
        )


class JobStopped(Exception):
    """The job's work was stopped: ``reason`` is ``"deadline"`` or ``"disconnected"``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Job:
    """One request's work: its deadline (``time.monotonic()``) and cancel flag."""

    deadline: float
    cancel: threading.Event = field(default_factory=threading.Event)
    cancel_reason: str = ""
    submitted: float = 0.0
    started: float = 0.0
    finished: float = 0.0

    def should_stop(self) -> bool:
        return self.cancel.is_set() or time.monotonic() > self.deadline

    def stop(self, reason: str) -> None:
        if not self.cancel.is_set():
            self.cancel_reason = reason
            self.cancel.set()

    @property
    def stop_reason(self) -> str:
        return self.cancel_reason or "deadline"

    def server_timing(self) -> str:
        """``Server-Timing`` header value: queue wait and model work, in ms."""
        queue = max(0.0, self.started - self.submitted) * 1000
        work = max(0.0, self.finished - self.started) * 1000
        return f"queue;dur={queue:.1f}, inference;dur={work:.1f}"


class Lane:
    """``workers`` threads; at most ``workers + max_queue`` requests admitted at a time."""

    def __init__(self, name: str, workers: int, max_queue: int) -> None:
        self.name, self.workers, self.max_queue = name, workers, max_queue
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix=f"molprop-{name}")
        self._lock = threading.Lock()
        self._admitted = 0  # submitted, not finished
        self._mean_s = 1.0  # moving average of a job's run time, for Retry-After

    @property
    def waiting(self) -> int:
        with self._lock:
            return max(0, self._admitted - self.workers)

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the queue ahead, at the mean job time."""
        with self._lock:
            return self._retry_unlocked()

    def submit(self, fn: Callable[[], T], job: Job) -> Future[T]:
        """Queue ``fn`` (raises :class:`QueueFull`); it is skipped if ``job`` must stop before it
        starts, and a :class:`PredictionCancelled` from it becomes :class:`JobStopped`."""
        with self._lock:
            if self._admitted >= self.workers + self.max_queue:
                waiting = self._admitted - self.workers
                raise QueueFull(self.name, waiting, self.max_queue, self._retry_unlocked())
            self._admitted += 1
        job.submitted = time.monotonic()

        def run() -> T:
            job.started = time.monotonic()
            try:
                if job.should_stop():
                    raise JobStopped(job.stop_reason)
                return fn()
            except PredictionCancelled as exc:
                raise JobStopped(job.stop_reason) from exc
            finally:
                job.finished = time.monotonic()
                with self._lock:
                    self._admitted -= 1
                    self._mean_s = 0.8 * self._mean_s + 0.2 * (job.finished - job.started)

        try:
            return self.executor.submit(run)
        except BaseException:
            with self._lock:
                self._admitted -= 1
            raise

    def _retry_unlocked(self) -> int:  # caller holds the lock
        ahead = max(1, self._admitted - self.workers + 1)
        return int(min(60, max(1, math.ceil(self._mean_s * ahead / self.workers))))

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _consume(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: no "exception was never retrieved" warning


async def run_job(lane: Lane, fn: Callable[[], T], job: Job, request: Request) -> T:
    """Run ``fn`` on ``lane`` and wait for it, checking every ``POLL_S`` whether the client is
    still connected and the deadline not passed; if not, set the job's cancel flag (the work
    stops at its next check) and raise :class:`JobStopped` without waiting for the worker."""
    future = asyncio.wrap_future(lane.submit(fn, job))
    try:
        while True:
            done, _ = await asyncio.wait({future}, timeout=POLL_S)
            if done:
                return future.result()
            if await request.is_disconnected():
                job.stop("disconnected")
                raise JobStopped("disconnected")
            if time.monotonic() > job.deadline:
                job.stop("deadline")
                raise JobStopped("deadline")
    finally:
        if not future.done():  # we stopped waiting (or were cancelled): so does the worker
            job.stop(job.cancel_reason or "disconnected")
            future.add_done_callback(_consume)
