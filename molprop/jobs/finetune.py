"""A fine-tune job: the caller's labelled table (stored with the job) + a served base model ->
a new artifact, stored in the job database as the model the caller named
(:func:`molprop.jobstore.store.finish_with_model`), which every API process then serves.

The job's ``report`` carries the held-out metrics, the baselines and their verdict
(:mod:`molprop.transfer.baselines`). A model that does not beat the mean predictor on
validation is not published unless the job asked ``force_publish``: the job is then done with
``published: false`` and the reason (:func:`molprop.jobstore.store.finish_unpublished`)."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from molprop.artifact import Artifact
from molprop.jobstore import store
from molprop.jobstore.options import FinetuneOptions
from molprop.jobstore.store import JobRecord
from molprop.models.config import finetune_train_config
from molprop.transfer.finetune import FinetuneRequest, run_finetune

log = logging.getLogger(__name__)


def job_report(metrics: dict[str, Any], force_publish: bool) -> dict[str, Any]:
    """What the job's status shows: ensemble metrics per held-out part, baselines, verdict,
    and whether the model is published (``reason`` when not, or when forced)."""
    verdict = metrics.get("verdict", {})
    report: dict[str, Any] = {
        "metrics": {p: metrics[p]["ensemble"] for p in ("val", "test") if p in metrics},
        "baselines": metrics.get("baselines", {}),
        "verdict": verdict,
        "published": True,
        "reason": None,
    }
    if verdict.get("beats_mean") is False:
        if force_publish:
            report["reason"] = f"published although {verdict['message']} (force_publish)"
        else:
            report["published"] = False
            report["reason"] = (
                f"not published: {verdict['message']}; submit again with force_publish=true "
                "to publish it anyway"
            )
    return report


def finetune_request(
    options: FinetuneOptions, base_dir: Path, data: Path, out: Path
) -> FinetuneRequest:
    """What ``run_finetune`` is asked for a fine-tune job with ``options``."""
    return FinetuneRequest(
        pretrained=base_dir,
        data=data,
        target_columns=[options.target_column],
        out=out,
        smiles_column=options.smiles_column,
        task_type=options.task_type,
        train=finetune_train_config(
            epochs=options.epochs, ensemble_size=options.ensemble_size, seed=options.seed
        ),
        units=[options.unit] if options.unit else [],
        name=options.name,
        progress=False,
    )


def run_finetune_job(
    engine: Engine, job: JobRecord, options: FinetuneOptions, base_dir: Path
) -> None:
    """Fine-tune ``base_dir`` on the job's table as its ``options`` say and store the result
    under ``options.name``; marks the job done in the same transaction."""
    assert job.claim is not None
    with tempfile.TemporaryDirectory(prefix="molprop-finetune-") as tmp:
        data = Path(tmp) / "data.csv"
        data.write_bytes(store.read_payload(engine, job.id))
        out = Path(tmp) / "model"
        log.info("job %s: fine-tuning %s on %s -> %s", job.id, job.model, data, options.name)
        result = run_finetune(finetune_request(options, base_dir, data, out))
        report = job_report(result.metrics, options.force_publish)
        if not report["published"]:
            store.finish_unpublished(engine, job.id, job.claim, report)
            log.warning("job %s: %s", job.id, report["reason"])
            return
        files = Artifact(out).pack()
        store.finish_with_model(engine, job.id, job.claim, options.name, files, report)
    log.info("job %s: model %s stored", job.id, options.name)


__all__ = ["finetune_request", "job_report", "run_finetune_job"]
