"""The job worker: claim a job, keep its lease alive, run it, record how it ended.

``molprop worker`` runs :meth:`Worker.run`; the service (``api.main``) starts one such process
next to itself. Any number of workers, on any machines, can share one PostgreSQL database
(claims are atomic, see :mod:`molprop.jobstore.store`); with SQLite they share one machine.

A heartbeat thread extends the lease every ``lease_s / 3`` seconds while a job runs. A worker
killed mid-job leaves the job ``running`` with a lease that runs out; the next worker to claim
it continues from its last complete chunk. On SIGTERM / SIGINT the worker puts its job back in
the queue (finished chunks kept) and exits. With ``parent_pid`` it also exits when that
process is gone (the worker ``make serve`` starts dies with its API process).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from molprop.artifact.published import PublishedModels
from molprop.artifact.resolve import resolve_model
from molprop.errors import TrainingInterrupted
from molprop.inference.predictor import Predictor
from molprop.jobs.predict import run_predict_job
from molprop.jobstore import db, store
from molprop.jobstore.options import FinetuneOptions
from molprop.jobstore.store import JobLost, JobRecord

log = logging.getLogger(__name__)


class WorkerStopping(BaseException):
    """SIGTERM / SIGINT arrived: put the job back and exit (not an ``Exception``, so no
    per-row or per-job error handler swallows it)."""


@dataclass(frozen=True)
class WorkerConfig:
    """``molprop worker`` options. ``lease_s``: how long a job stays claimed without a
    heartbeat (a killed worker's job is re-claimed after it); ``poll_s``: wait between claims
    when the queue is empty; ``exit_when_idle``: stop when no job is claimable;
    ``max_jobs``: stop after that many jobs; ``model_dir``: where model names are looked up
    first (default: ``$MOLPROP_MODEL_DIR``, then the shipped models)."""

    database_url: str | None = None
    data_dir: Path | None = None
    model_dir: Path | None = None
    lease_s: float = 30.0
    poll_s: float = 1.0
    batch_size: int = 256
    num_workers: int = 0
    exit_when_idle: bool = False
    max_jobs: int | None = None
    parent_pid: int | None = None


class _Heartbeat(threading.Thread):
    def __init__(self, engine: Engine, job: JobRecord, lease_s: float) -> None:
        super().__init__(daemon=True, name=f"heartbeat-{job.id}")
        self.engine, self.job, self.lease_s = engine, job, lease_s
        self.halt = threading.Event()

    def run(self) -> None:
        claim = self.job.claim
        assert claim is not None  # the worker runs claimed jobs only
        while not self.halt.wait(self.lease_s / 3):
            try:
                if not store.heartbeat(self.engine, self.job.id, claim, self.lease_s):
                    log.info("job %s is no longer ours (cancelled or re-claimed)", self.job.id)
                    return
            except Exception:  # a database hiccup: the next beat retries
                log.exception("heartbeat of job %s failed", self.job.id)


class Worker:
    """Claims and runs jobs from one database (see the module docstring)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.engine = db.make_engine(config.database_url)
        db.migrate(self.engine)
        self.data_dir = Path(config.data_dir or db.data_dir())
        self.published = PublishedModels.in_data_dir(self.engine, self.data_dir)
        self._predictors: dict[str, Predictor] = {}
        self.jobs_run = 0

    def model_dir(self, name: str) -> Path:
        """A model name -> its artifact directory (:func:`~molprop.artifact.resolve.resolve_model`):
        a model made by a fine-tune job (extracted from the database once), else one of
        ``model_dir``, ``$MOLPROP_MODEL_DIR`` or the shipped models."""
        served = [self.config.model_dir] if self.config.model_dir is not None else []
        return resolve_model(name, served, self.published)

    def predictor(self, name: str) -> Predictor:
        """The loaded model ``name``, cached by its directory (a model deleted and published
        again under the same name has a new one, so the old predictor is not reused)."""
        directory = self.model_dir(name)
        key = str(directory.resolve())
        if key not in self._predictors:
            self._predictors[key] = Predictor.from_pretrained(directory)
        return self._predictors[key]

    def run_job(self, job: JobRecord) -> None:
        """Run one claimed job to its end: done, failed (with the reason), lost (cancelled or
        re-claimed: nothing more is written) or released (the worker is stopping)."""
        claim = job.claim
        assert claim is not None  # claim_job's token
        beat = _Heartbeat(self.engine, job, self.config.lease_s)
        beat.start()
        log.info("job %s (%s, %s): claimed, attempt %d", job.id, job.kind, job.model, job.attempts)
        try:
            options = job.options
            if isinstance(options, FinetuneOptions):
                # imported here: training code (Lightning) loads only for fine-tune jobs
                from molprop.jobs.finetune import run_finetune_job

                run_finetune_job(self.engine, job, options, self.model_dir(job.model))
            else:
                run_predict_job(
                    self.engine,
                    job,
                    options,
                    self.predictor(job.model),
                    lease_s=self.config.lease_s,
                    batch_size=self.config.batch_size,
                    num_workers=self.config.num_workers,
                )
                if not store.finish_job(self.engine, job.id, claim):
                    raise JobLost(f"job {job.id} was not finished by this worker")
            log.info("job %s: done", job.id)
        except JobLost as exc:
            log.info("job %s: stopped (%s)", job.id, exc)
        except (WorkerStopping, TrainingInterrupted) as exc:
            store.release_job(self.engine, job.id, claim)
            log.info("job %s: put back in the queue", job.id)
            if isinstance(exc, TrainingInterrupted):  # Lightning saw the SIGTERM first
                raise WorkerStopping("SIGTERM") from exc
            raise
        except Exception as exc:  # the job failed, the worker goes on
            log.exception("job %s failed", job.id)
            store.fail_job(self.engine, job.id, claim, f"{type(exc).__name__}: {exc}")
        finally:
            beat.halt.set()
            beat.join()

    def _parent_gone(self) -> bool:
        pid = self.config.parent_pid
        return pid is not None and os.getppid() != pid

    def run(self) -> int:
        """Claim and run jobs until stopped -> the number of jobs run."""

        def stop(signum, _frame) -> None:
            raise WorkerStopping(signal.Signals(signum).name)

        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        log.info("worker %d: database %s", os.getpid(), self.engine.url.render_as_string())
        try:
            while not self._parent_gone():
                job = store.claim_job(self.engine, self.config.lease_s)
                if job is None:
                    if self.config.exit_when_idle:
                        break
                    time.sleep(self.config.poll_s)
                    continue
                self.run_job(job)
                self.jobs_run += 1
                if self.config.max_jobs is not None and self.jobs_run >= self.config.max_jobs:
                    break
        except WorkerStopping as exc:
            log.info("worker %d: %s, stopping", os.getpid(), exc)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.engine.dispose()
        return self.jobs_run


__all__ = ["Worker", "WorkerConfig", "WorkerStopping"]
