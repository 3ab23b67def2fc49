"""Request and response bodies of the prediction service (separate models for each)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: molprop.inference.STATUSES (tests/api/test_api_statuses.py keeps them equal)
Status = Literal["ok", "invalid_input", "unsupported", "error"]


#: most models one request may name in ``models``
MAX_PANEL_MODELS = 64


class PredictRequest(BaseModel):
    """``POST /v1/predict`` body: ``model`` (a served model, or a panel: ``GET /v1/panels``) or
    ``models`` (several served models answered together), not both. ``ids``, if given, has one
    entry per SMILES."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="a served model (GET /v1/models), or a panel (GET /v1/panels): every model "
        "of the panel answers each molecule (the panel response)",
        examples=["solubility"],
    )
    models: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_PANEL_MODELS,
        description="several served models answered together, in this order (the panel "
        "response); their target names must differ",
        examples=[["solubility", "lipophilicity"]],
    )
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
        if (self.model is None) == (self.models is None):
            raise ValueError(
                "give either 'model' (a model or a panel) or 'models' (a list of models)"
            )
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


class EndpointResult(BaseModel):
    """One endpoint (a target of one of the panel's models) of one input row. ``value`` is null
    exactly when ``status`` is not ``ok`` (the model did not predict the row); so are ``std``,
    ``low``, ``high``, ``percentile``, ``in_domain`` and ``similarity``, which are also null
    where the model has none (no ensemble, no calibration or a classifier, no reference, no
    domain)."""

    model_config = ConfigDict(protected_namespaces=())

    target: str
    model: str = Field(description="the served model that predicts it")
    value: float | None
    unit: str
    std: float | None = Field(None, description="std over ensemble members")
    low: float | None = Field(None, description="calibrated interval at the response's level")
    high: float | None = None
    percentile: float | None = Field(
        None, description="the value's percentile (0-100) among approved drugs' predictions"
    )
    in_domain: bool | None = Field(None, description="the model's applicability domain")
    similarity: float | None = Field(
        None, description="max Tanimoto similarity to the model's training set"
    )
    status: Status
    error: str | None = None


class PanelPhyschem(BaseModel):
    """RDKit physicochemical properties, drug-likeness rules and structural alerts of the row's
    molecule (as ``POST /v1/physchem`` gives them)."""

    described_smiles: str = Field(
        description="the molecule described: the largest organic fragment, neutralised"
    )
    properties: dict[str, float | int | None]
    rules: dict[str, bool | int | None] = Field(
        description="lipinski_violations, lipinski_pass (≤ 1 violation), veber_pass"
    )
    alerts: dict[str, list[str]] = Field(
        description="PAINS, Brenk and NIH alerts by name (empty lists: none)"
    )


class PanelResult(BaseModel):
    """One input row: its status and error (every endpoint's when the models fail alike; a
    row where one model failed and another predicted has the failure's status and an error
    naming the model), every endpoint in panel order, and the physchem block (null where the
    molecule could not be read)."""

    index: int
    id: str | int | None = None
    smiles: str
    standardized_smiles: str | None = Field(
        None, description="the molecule the models read after the chemistry checks"
    )
    status: Status
    error: str | None = None
    endpoints: list[EndpointResult]
    physchem: PanelPhyschem | None = None


class PanelModel(BaseModel):
    """One model of a panel response."""

    name: str
    version: str
    targets: list[str]
    calibration: str = Field(
        "", description="what its intervals / probabilities are, or that it is not calibrated"
    )


class PanelResponse(BaseModel):
    """``POST /v1/predict`` with a panel or a list of models: every endpoint per molecule."""

    panel: str | None = Field(description="the panel's name; null for a list of models")
    description: str = ""
    interval: float | None = Field(description="level of every endpoint's low / high")
    models: list[PanelModel]
    physchem_units: dict[str, str]
    results: list[PanelResult]


class PanelEndpoint(BaseModel):
    """An endpoint a panel answers: a target of one of its models."""

    model_config = ConfigDict(protected_namespaces=())

    target: str
    model: str
    unit: str
    task: str
    interval_coverage: list[CoverageInfo] = Field(
        default_factory=list,
        description="its intervals' measured coverage on its model's test part, by level",
    )


class PanelSummary(BaseModel):
    """A panel the service knows (``<model dir>/panels/<name>.json``)."""

    name: str
    description: str
    models: list[str] = Field(description="its models, in display order")
    endpoints: list[PanelEndpoint] = Field(description="what it answers (its served models')")
    missing: list[str] = Field(
        default_factory=list,
        description="its models this service does not serve: the panel cannot be asked for "
        "until they are",
    )
    endpoint_status: bool = Field(
        default=False,
        description="its models screen molecules differently (featuriser or training "
        "elements): each endpoint has its own status and error (the CLI's and Python's "
        "<target>_status / <target>_error columns)",
    )


class CoverageInfo(BaseModel):
    """How a target's intervals at one level covered the model's test molecules."""

    level: float = Field(description="the interval level, e.g. 0.9")
    coverage: float = Field(description="the fraction of test molecules inside the interval")
    n: int = Field(description="test molecules measured")
    cp_low: float = Field(description="95 % Clopper–Pearson interval of coverage: low end")
    cp_high: float = Field(description="95 % Clopper–Pearson interval of coverage: high end")
    verdict: Literal["holds", "below", "above"] = Field(
        description="holds: the Clopper–Pearson interval contains the level; below: the "
        "intervals covered significantly less than they say (read them as wider); above: "
        "significantly more"
    )


class TargetInfo(BaseModel):
    """One target a model predicts."""

    name: str
    unit: str = Field(description="its unit (empty where none is recorded)")
    interval_coverage: list[CoverageInfo] = Field(
        default_factory=list,
        description="its intervals' measured coverage on the model's test part, by level "
        "(empty: not calibrated with intervals, or not measured)",
    )


class ModelSummary(BaseModel):
    name: str
    task: str
    target: str | None = Field(
        description="the model's target; null for a multitask model (several targets: see "
        "targets; POST /v1/predict answers it with the panel response, one endpoint per target)"
    )
    unit: str | None = Field(description="the target's unit; null for a multitask model")
    targets: list[TargetInfo] = Field(
        description="every target the model predicts, with its unit, in output order"
    )
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


#: The OpenAPI error answers of the row endpoints (predict, embed, explain): unknown model,
#: too many rows, malformed body, queue full, past the deadline; each with an :class:`ErrorBody`.
ROW_ENDPOINT_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (404, 413, 422, 503, 504)
}
