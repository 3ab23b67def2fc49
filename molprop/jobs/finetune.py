"""A fine-tune job: the caller's labelled table (stored with the job) + a served base model ->
a new artifact, stored in the job database as the model the caller named
(:func:`molprop.jobstore.store.finish_with_model`), which every API process then serves."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from sqlalchemy import Engine

from molprop.jobstore import store
from molprop.jobstore.store import JobRecord
from molprop.models.config import TrainConfig
from molprop.transfer.finetune import FinetuneRequest, run_finetune

log = logging.getLogger(__name__)

#: options of a fine-tune job with their defaults (the service validates them)
FINETUNE_DEFAULTS = {
    "smiles_column": "smiles",
    "task_type": "regression",
    "strategy": "full",
    "epochs": 30,
    "ensemble_size": 1,
    "seed": 0,
}


def run_finetune_job(engine: Engine, job: JobRecord, base_dir: Path) -> None:
    """Fine-tune ``base_dir`` on the job's table and store the result under
    ``job.options["name"]``; marks the job done in the same transaction."""
    assert job.claim is not None
    options = {**FINETUNE_DEFAULTS, **job.options}
    with tempfile.TemporaryDirectory(prefix="molprop-finetune-") as tmp:
        data = Path(tmp) / "data.csv"
        data.write_bytes(store.read_payload(engine, job.id))
        out = Path(tmp) / "model"
        log.info("job %s: fine-tuning %s on %s -> %s", job.id, job.model, data, options["name"])
        run_finetune(
            FinetuneRequest(
                pretrained=base_dir,
                data=data,
                target_columns=[options["target_column"]],
                out=out,
                smiles_column=options["smiles_column"],
                strategy=options["strategy"],
                task_type=options["task_type"],
                train=TrainConfig(
                    epochs=int(options["epochs"]),
                    ensemble_size=int(options["ensemble_size"]),
                    seed=int(options["seed"]),
                    patience=max(1, int(options["epochs"]) // 4),
                ),
                units=[options["unit"]] if options.get("unit") else [],
                name=options["name"],
                progress=False,
            )
        )
        store.finish_with_model(engine, job.id, job.claim, options["name"], out)
    log.info("job %s: model %s stored", job.id, options["name"])


__all__ = ["FINETUNE_DEFAULTS", "run_finetune_job"]
