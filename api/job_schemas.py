"""Request and response bodies of ``/v1/jobs`` (persistent jobs, :mod:`api.jobs`)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from molprop.artifact.resolve import FOUNDATION_MODEL
from molprop.jobstore.options import FinetuneOptions, JobKind, PredictOptions, TaskType, default
from molprop.jobstore.store import JobStatus


class JobRequest(BaseModel):
    """``POST /v1/jobs`` JSON body: a predict job over ``smiles``. ``ids``, if given, must have
    exactly one entry per SMILES (``len(ids) == len(smiles)``, else 422); they come back in the
    result CSV's ``id`` column."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    kind: Literal["predict"] = "predict"
    model: str = Field(..., min_length=1, max_length=200, examples=["solubility"])
    smiles: list[str] = Field(..., min_length=1, examples=[["CCO", "c1ccccc1O", "not a smiles"]])
    ids: list[str] | None = Field(
        None,
        description="one id per SMILES (same length as smiles), returned in the id column",
        examples=[["a", "b", "c"]],
    )
    interval: float | None = Field(
        0.9,
        gt=0.0,
        lt=1.0,
        description="level of the calibrated interval columns <target>_low / <target>_high "
        "(regression models with a calibration; null: none)",
    )

    @model_validator(mode="after")
    def _ids_match(self) -> JobRequest:
        if self.ids is not None and len(self.ids) != len(self.smiles):
            raise ValueError(
                f"ids has {len(self.ids)} entries but smiles has {len(self.smiles)}: "
                "give one id per SMILES, or none"
            )
        return self


class JobUpload(BaseModel):
    """``POST /v1/jobs`` multipart form (documentation of the form fields). ``kind=predict``:
    ``file`` is a CSV / TSV / SMI table (optionally gzipped) whose ``smiles_column`` holds the
    SMILES; every column comes back in the result CSV (``id_column``, if named, must exist).
    ``kind=finetune``: ``file`` is a labelled CSV (``smiles_column``, ``target_column``),
    ``model`` a served base model (default: ``foundation`` when it is served), ``name`` the new
    model's name (``^[A-Za-z0-9][A-Za-z0-9_.-]*$``, at most 100 characters, not taken); when
    the job is done the service serves it."""

    # (the defaults are those of the job's options, molprop.jobstore.options, which
    # predict_options / finetune_options make from the fields; this docstring is the
    # OpenAPI description)
    model_config = ConfigDict(protected_namespaces=())

    file: bytes = Field(..., json_schema_extra={"format": "binary"})
    model: str | None = Field(
        None,
        examples=["solubility"],
        description="the model predicting; finetune: the base model (default: foundation, "
        "when served)",
    )
    kind: JobKind = "predict"
    smiles_column: str = default(PredictOptions, "smiles_column")
    id_column: str | None = None
    interval: float | None = Field(0.9, gt=0.0, lt=1.0)
    name: str | None = Field(None, description="finetune: the new model's name")
    target_column: str | None = Field(None, description="finetune: the label column")
    task_type: TaskType = default(FinetuneOptions, "task_type")
    epochs: int = Field(
        default(FinetuneOptions, "epochs"),
        ge=1,
        le=500,
        description="finetune: most training epochs",
    )
    unit: str | None = Field(None, description="finetune: unit of the label")
    force_publish: bool = Field(
        default(FinetuneOptions, "force_publish"),
        description="finetune: publish the new model even when it does not beat the mean "
        "predictor on validation (by default it is then not published)",
    )

    def model_name(self, served: Collection[str]) -> str:
        """``model``, or for a fine-tune job without one the foundation model when it is
        ``served``; else ValueError with the reason (the service answers 422)."""
        if self.model:
            return self.model
        if self.kind == "finetune" and FOUNDATION_MODEL in served:
            return FOUNDATION_MODEL
        if self.kind == "finetune":
            raise ValueError(
                f"a fine-tune job needs a base model (field 'model'): no {FOUNDATION_MODEL!r} "
                "model is served to start from"
            )
        raise ValueError("a predict job needs the model (field 'model')")

    def predict_options(self, interval: float | None) -> PredictOptions:
        """A predict job's options: ``interval`` the level the model gives (None: none)."""
        return PredictOptions(
            smiles_column=self.smiles_column, interval=interval, id_column=self.id_column
        )

    def finetune_options(self, name: str, target_column: str, rows: int) -> FinetuneOptions:
        """A fine-tune job's options: ``name`` and ``target_column`` as checked, ``rows`` of
        the uploaded table."""
        return FinetuneOptions(
            name=name,
            target_column=target_column,
            smiles_column=self.smiles_column,
            task_type=self.task_type,
            epochs=self.epochs,
            unit=self.unit,
            rows=rows,
            force_publish=self.force_publish,
        )


class JobInfo(BaseModel):
    """A job's state. ``rows_done`` of ``rows_total`` rows have results (predict jobs;
    updated per chunk); ``error`` says why a job failed."""

    model_config = ConfigDict(protected_namespaces=())

    id: str
    kind: JobKind
    model: str = Field(..., description="the model predicting (predict) or the base model")
    status: JobStatus
    rows_done: int
    rows_total: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    new_model: str | None = Field(
        None, description="finetune: the name the model is served as (null: not published)"
    )
    published: bool | None = Field(
        None,
        description="finetune, done: whether the model is served (false: it does not beat the "
        "mean predictor on validation and force_publish was not set; see report.reason)",
    )
    report: dict[str, Any] | None = Field(
        None,
        description="finetune, done: held-out ensemble metrics (val, test), the baselines' "
        "metrics (mean predictor, starting model, linear model on its prediction), the "
        "verdict, published and reason",
    )
    owner: str | None = Field(
        None, description="name of the API key that submitted the job (null: no keys)"
    )


class JobList(BaseModel):
    jobs: list[JobInfo]
