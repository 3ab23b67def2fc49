"""Request and response bodies of the prediction service (separate models for each)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: molprop.inference.STATUSES (tests/api/test_api_statuses.py keeps them equal)
Status = Literal["ok", "invalid_input", "unsupported", "error"]


class PredictRequest(BaseModel):
    """``POST /v1/predict`` body. ``ids``, if given, has one entry per SMILES."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(..., min_length=1, max_length=200, examples=["solubility"])
    smiles: list[str] = Field(..., min_length=1, examples=[["CCO", "c1ccccc1O"]])
    ids: list[str | int] | None = Field(None, examples=[["ethanol", "phenol"]])
    interval: float | None = Field(
        0.9,
        gt=0.0,
        lt=1.0,
        description="level of the calibrated prediction interval of each row (regression "
        "models with a calibration; null: none)",
        examples=[0.9],
    )
    low: list[float | str | None] | None = Field(
        None,
        description="one measured low-fidelity label per SMILES, for transfer models trained "
        "on measured labels (their card says so; they refuse requests without it); a missing "
        "or non-numeric value makes that row invalid_input. Other models ignore it",
        examples=[[8.91, 8.52]],
    )

    @model_validator(mode="after")
    def _ids_match(self) -> PredictRequest:
        if self.ids is not None and len(self.ids) != len(self.smiles):
            raise ValueError(f"ids has {len(self.ids)} entries but smiles has {len(self.smiles)}")
        if self.low is not None and len(self.low) != len(self.smiles):
            raise ValueError(f"low has {len(self.low)} entries but smiles has {len(self.smiles)}")
        return self


class Interval(BaseModel):
    """A calibrated prediction interval: the true value lies in [low, high] for a fraction
    ``level`` of molecules like the calibration set (split-conformal; see the model card)."""

    level: float
    low: float
    high: float


class PredictionResult(BaseModel):
    """One input row. ``value`` is null exactly when ``status`` is not ``ok``; so are
    ``uncertainty``, ``in_domain`` and ``interval``. ``status``: ``ok``; ``invalid_input``
    (the input cannot be read); ``unsupported`` (a valid molecule the model does not cover:
    inorganic, a metal, an element never seen in training; ``error`` says which); ``error``."""

    index: int
    id: str | int | None = None
    smiles: str
    standardized_smiles: str | None = Field(
        None,
        description="the molecule the model read after the chemistry checks: the input itself "
        "when they changed nothing, else the canonical SMILES of its largest organic fragment, "
        "neutralised; null where the input could not be standardised",
    )
    value: float | None
    uncertainty: float | None = Field(None, description="std over ensemble members")
    percentile: float | None = Field(
        None,
        description="the value's percentile (0-100) among the model's predictions for approved "
        "drugs (see the model card); null for a model without that reference or a failed row",
    )
    in_domain: bool | None = Field(
        None,
        description="applicability domain (see the model card); null for a model without "
        "one and wherever there is no prediction",
    )
    similarity: float | None = Field(
        None,
        description="max Tanimoto similarity to the training set (Morgan fingerprints), which "
        "decides in_domain against the threshold in the model card; null for a model without "
        "a domain and wherever there is no prediction",
    )
    interval: Interval | None = Field(
        None,
        description="calibrated prediction interval; null when none was asked for, the model "
        "is not calibrated or is a classifier, or the row failed",
    )
    status: Status
    error: str | None = None


class PredictResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    version: str
    unit: str
    calibration: str = Field(
        "",
        description="what the intervals / probabilities are, or that the model is not calibrated",
    )
    results: list[PredictionResult]


class ModelSummary(BaseModel):
    name: str
    task: str
    target: str
    unit: str
    version: str
    n_members: int
    test_metrics: dict[str, float] = Field(default_factory=dict)
    calibration: str = Field("", description="the model's calibration, or 'not calibrated: ...'")


class ModelCard(ModelSummary):
    card: str = Field("", description="card.md (markdown)")


class WorkerHealth(BaseModel):
    """The ``molprop worker`` processes this service supervises (``MOLPROP_JOB_WORKERS``)."""

    configured: int = Field(description="workers the service runs (0: jobs run elsewhere)")
    alive: int = Field(description="of those, running now (a dead one is restarted)")
    restarts: int = Field(description="restarts of dead workers since the service started")


class Health(BaseModel):
    status: Literal["ok", "degraded"] = Field(
        description="degraded: none of the service's job workers is alive while jobs wait "
        "(predictions still work; the answer is still 200)"
    )
    models: list[str]
    workers: WorkerHealth | None = None
    jobs_waiting: int | None = Field(
        None, description="claimable jobs, counted only when no worker of the service is alive"
    )
    detail: str | None = None


class ErrorBody(BaseModel):
    detail: str
