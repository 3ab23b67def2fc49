"""Job options: one typed record per job kind, stored as JSON and read back typed; rows the
service wrote before the records existed read as before; bad values never reach a worker; the
service's request schema and the worker take their defaults from the records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest

from api.job_schemas import JobUpload
from molprop.errors import ConfigError
from molprop.jobstore import JobInput, make_engine, migrate, store
from molprop.jobstore.options import (
    KINDS,
    OPTIONS,
    FinetuneOptions,
    JobKind,
    PredictOptions,
    TaskType,
    default,
    options_from_json,
)
from molprop.models.config import finetune_train_config
from molprop.nn.heads import TaskType as ModelTaskType
from molprop.transfer.finetune import FinetuneRequest


def test_each_kind_has_its_record_and_the_choices_match_the_models():
    assert KINDS == get_args(JobKind) == tuple(OPTIONS) == store.KINDS
    assert {k: r.kind for k, r in OPTIONS.items()} == {k: k for k in KINDS}
    assert get_args(TaskType) == get_args(ModelTaskType)


def test_records_round_trip_through_json():
    fine = FinetuneOptions(name="m", target_column="y", task_type="classification", unit="nM")
    assert options_from_json("finetune", fine.to_json()) == fine
    pred = PredictOptions(smiles_column="SMILES", interval=0.8, id_column="id")
    assert options_from_json("predict", pred.to_json()) == pred


def test_rows_written_before_the_records_read_as_before():
    """The JSON the service stored until now: missing options take the defaults the worker
    used to fill in."""
    old = {
        "name": "my_assay-v1",
        "smiles_column": "smiles",
        "target_column": "my assay",
        "task_type": "regression",
        "epochs": 2,
        "unit": None,
        "rows": 80,
        "force_publish": False,
    }
    fine = options_from_json("finetune", json.dumps(old))
    assert isinstance(fine, FinetuneOptions)
    assert (fine.name, fine.epochs, fine.rows, fine.ensemble_size, fine.seed) == (
        "my_assay-v1",
        2,
        80,
        1,
        0,
    )
    pred = options_from_json("predict", json.dumps({"interval": 0.9, "smiles_column": "smiles"}))
    assert pred == PredictOptions(smiles_column="smiles", interval=0.9, id_column=None)
    assert options_from_json("predict", "{}") == PredictOptions()


@pytest.mark.parametrize(
    ("kind", "options", "says"),
    [
        ("finetune", {"name": "m", "target_column": "y", "task_type": "ordinal"}, "task_type"),
        ("finetune", {"name": "m", "target_column": "y", "epochs": "30"}, "epochs"),
        ("finetune", {"name": "m", "target_column": "y", "epochs": True}, "epochs"),
        ("finetune", {"name": "m", "target_column": "y", "epochs": 0}, "at least 1"),
        ("finetune", {"name": "m", "target_column": "y", "strategy": "delta"}, "unknown"),
        ("finetune", {"target_column": "y"}, "['name'] missing"),
        ("predict", {"interval": 1.5}, "(0, 1)"),
        ("predict", {"interval": "0.9"}, "interval"),
        ("predict", [], "JSON object"),
        ("score", {}, "unknown job kind 'score'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(kind, options, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        options_from_json(kind, json.dumps(options))


def test_create_job_stores_the_record_and_reads_it_back_typed(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    try:
        migrate(engine)
        job_input = JobInput.from_lists(["CCO", "CCN"], None, 10, 100)
        job = store.create_job(engine, "solubility", job_input, PredictOptions(interval=0.8))
        assert job.kind == "predict" and job.options == PredictOptions(
            smiles_column=job_input.smiles_column, interval=0.8
        )
        fine = FinetuneOptions(name="new", target_column="y", epochs=3)
        job = store.create_job(engine, "solubility", None, fine, b"smiles,y\n")
        assert job.kind == "finetune" and store.get_job(engine, job.id).options == fine
        assert store.pending_model_names(engine) == {"new"}
    finally:
        engine.dispose()


def test_the_service_and_the_worker_take_the_defaults_of_the_record(tmp_path: Path):
    from molprop.jobs.finetune import finetune_request

    fields = JobUpload.model_validate({"file": b"", "kind": "finetune"})
    options = fields.finetune_options("m", "y", 10)
    assert options == FinetuneOptions(name="m", target_column="y", rows=10)
    assert fields.smiles_column == default(PredictOptions, "smiles_column")
    request = finetune_request(options, tmp_path / "base", tmp_path / "d.csv", tmp_path / "out")
    # what a fine-tune job has always run with
    assert (request.strategy, request.task_type, request.smiles_column, request.units) == (
        "full",
        "regression",
        "smiles",
        [],
    )
    # trained as `molprop finetune` and the Python API train with no settings given
    assert request.train == finetune_train_config()
    assert request.train == FinetuneRequest(None, "d.csv", ["y"], "out").train
    assert request.target_columns == ["y"] and request.name == "m" and not request.progress
