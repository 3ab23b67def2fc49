"""A fine-tune job whose training Lightning stops on SIGTERM goes back in the queue (the worker
is stopping), instead of failing or vanishing; any other error fails the job with its reason."""

from __future__ import annotations

import pytest

import molprop.jobs.finetune
from molprop.errors import TrainingInterrupted
from molprop.jobs.worker import Worker, WorkerConfig, WorkerStopping
from molprop.jobstore import FinetuneOptions, store


def _claimed_finetune_job(worker: Worker) -> store.JobRecord:
    options = FinetuneOptions(name="new", target_column="y")
    job = store.create_job(worker.engine, "solubility", None, options, payload=b"smiles,y\n")
    claimed = store.claim_job(worker.engine, 30.0)
    assert claimed is not None and claimed.id == job.id
    return claimed


@pytest.mark.parametrize(
    ("raised", "status"),
    [
        (TrainingInterrupted("training stopped by SIGTERM"), store.QUEUED),
        (RuntimeError("boom"), store.FAILED),
    ],
)
def test_interrupted_training_puts_the_job_back(tmp_path, monkeypatch, raised, status):
    worker = Worker(
        WorkerConfig(database_url=f"sqlite:///{tmp_path / 'jobs.db'}", data_dir=tmp_path)
    )

    def train(*_args, **_kwargs):
        raise raised

    monkeypatch.setattr(molprop.jobs.finetune, "run_finetune_job", train)
    job = _claimed_finetune_job(worker)
    if status == store.QUEUED:
        with pytest.raises(WorkerStopping):
            worker.run_job(job)
    else:
        worker.run_job(job)
    after = store.get_job(worker.engine, job.id)
    assert after is not None and after.status == status
    if status == store.FAILED:
        assert "boom" in (after.error or "")
