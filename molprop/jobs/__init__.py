"""Running the service's persistent jobs: the worker (``molprop worker``).

* :mod:`~molprop.jobs.predict` — a predict job, chunk by chunk, through the streaming loop
  (:func:`molprop.inference.streaming.predict_chunks`), each chunk's result committed with the
  job's progress;
* :mod:`~molprop.jobs.finetune` — a fine-tune job (:func:`molprop.transfer.finetune.run_finetune`)
  whose artifact is stored in the job database under the caller's model name;
* :mod:`~molprop.jobs.worker` — claim, heartbeat, dispatch, release on shutdown (training code
  is imported only when a fine-tune job arrives).

A layer above :mod:`molprop.transfer` (fine-tuning trains), so the service never imports it: the
service starts workers as processes (``api.main``) and talks to them only through the database
(:mod:`molprop.jobstore`).
"""

from molprop.jobs.worker import Worker, WorkerConfig

__all__ = ["Worker", "WorkerConfig"]
