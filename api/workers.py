"""The ``molprop worker`` processes the service starts (``MOLPROP_JOB_WORKERS``), supervised.

A thread looks at the workers every :data:`CHECK_S` seconds. A worker that exited (killed,
crashed, out of memory) is logged with its exit status and started again after a back-off
that doubles on each quick death (``MOLPROP_JOB_WORKER_BACKOFF_S`` … :data:`MAX_BACKOFF_S`) and
starts over once a worker has lived :data:`STABLE_S` seconds. The job a killed worker held stays
``running`` until its lease runs out (``MOLPROP_JOB_LEASE_S``); the restarted worker (or any
other) then claims it and continues after its last complete chunk.

Processes, not threads: fine-tune jobs train, and the service never imports training code.
Each worker exits when the service is gone (``--parent-pid``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from api.settings import Settings

log = logging.getLogger(__name__)

#: seconds between looks at the workers
CHECK_S = 0.5
#: the longest wait before restarting a worker that keeps dying
MAX_BACKOFF_S = 60.0
#: a worker that lived this long resets its back-off
STABLE_S = 60.0


@dataclass(frozen=True)
class WorkerState:
    """What ``/health`` reports about the supervised workers."""

    configured: int
    alive: int
    restarts: int


def describe_exit(code: int) -> str:
    """``Popen.returncode`` in words: ``killed by SIGKILL`` or ``exit status 1``."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class _Slot:
    """One worker: its process (None while waiting to be restarted) and its back-off."""

    def __init__(self, backoff: float) -> None:
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.backoff = backoff
        self.restart_at = 0.0


class WorkerSupervisor:
    """Starts ``settings.job_workers`` workers, restarts the dead ones, stops them all."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.first_backoff = settings.job_worker_backoff_s
        self._slots = [_Slot(self.first_backoff) for _ in range(settings.job_workers)]
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.restarts = 0

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "molprop.cli.main",
            "worker",
            "--parent-pid",
            str(os.getpid()),
            "--lease",
            str(self.settings.job_lease_s),
        ]

    def _environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "MOLPROP_DATABASE_URL": self.settings.job_database_url,
            "MOLPROP_DATA_DIR": str(self.settings.data_dir),
            "MOLPROP_MODEL_DIR": str(self.settings.model_dir),
        }

    def _spawn(self, slot: _Slot) -> None:
        try:
            slot.proc = subprocess.Popen(self.command(), env=self._environment())
        except OSError:
            log.exception("could not start a job worker; retrying in %.1f s", slot.backoff)
            self._schedule(slot, time.monotonic())
            return
        slot.started = time.monotonic()
        log.info("started job worker %d", slot.proc.pid)

    def _schedule(self, slot: _Slot, now: float) -> None:
        slot.proc = None
        slot.restart_at = now + slot.backoff
        slot.backoff = min(slot.backoff * 2, MAX_BACKOFF_S)

    def start(self) -> None:
        """Start every worker and the thread that watches them."""
        with self._lock:
            for slot in self._slots:
                self._spawn(slot)
        if self._slots:
            self._thread = threading.Thread(target=self._watch, name="job-workers", daemon=True)
            self._thread.start()

    def check(self) -> None:
        """One look: log and schedule the restart of each dead worker; restart those due."""
        now = time.monotonic()
        with self._lock:
            if self._halt.is_set():
                return
            for slot in self._slots:
                if slot.proc is not None:
                    code = slot.proc.poll()
                    if code is None:
                        continue
                    if now - slot.started >= STABLE_S:
                        slot.backoff = self.first_backoff
                    log.warning(
                        "job worker %d died (%s) after %.1f s; restarting it in %.1f s",
                        slot.proc.pid,
                        describe_exit(code),
                        now - slot.started,
                        slot.backoff,
                    )
                    self._schedule(slot, now)
                elif now >= slot.restart_at:
                    self.restarts += 1
                    self._spawn(slot)
                    if slot.proc is not None:
                        log.warning("restarted job worker: now %d", slot.proc.pid)

    def _watch(self) -> None:
        while not self._halt.wait(CHECK_S):
            try:
                self.check()
            except Exception:  # the supervisor itself must not die
                log.exception("supervising the job workers failed")

    def state(self) -> WorkerState:
        with self._lock:
            alive = sum(1 for s in self._slots if s.proc is not None and s.proc.poll() is None)
            return WorkerState(len(self._slots), alive, self.restarts)

    def pids(self) -> list[int | None]:
        """The pid of each worker (None while it waits to be restarted)."""
        with self._lock:
            return [None if s.proc is None else s.proc.pid for s in self._slots]

    def stop(self, timeout: float = 30.0) -> None:
        """No more restarts; SIGTERM (a worker puts its job back in the queue), then SIGKILL
        after ``timeout``."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            procs = [s.proc for s in self._slots if s.proc is not None]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


__all__ = ["WorkerState", "WorkerSupervisor", "describe_exit"]
