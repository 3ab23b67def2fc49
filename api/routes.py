"""HTTP routes: ``/health``, ``/v1/models``, ``/v1/models/{name}``, ``/v1/panels``,
``/v1/predict`` (one model, or a panel: :mod:`api.panel`)."""

from __future__ import annotations

import logging
import math
import time
from typing import Annotated, Any, cast

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.security import APIKeyHeader
from starlette.concurrency import run_in_threadpool

from api.budget import CONFORMER_TOKENS_PER_ATOM, RequestCost, predictor_costs
from api.errors import StrictJSONRoute, safe_text
from api.keys import Caller, authenticate
from api.panel import (
    add_cost,
    is_panel_request,
    panel_over_budget,
    panel_response,
    panel_results,
    panel_summaries,
    requested_panel,
)
from api.registry import ServedModel
from api.scheduler import Job, JobStopped, Lane, QueueFull, run_job
from api.schemas import (
    ROW_ENDPOINT_ERRORS,
    ErrorBody,
    Health,
    Interval,
    ModelCard,
    ModelSummary,
    PanelResponse,
    PanelSummary,
    PredictionResult,
    PredictRequest,
    PredictResponse,
    WorkerHealth,
)
from api.settings import Settings
from molprop.artifact.calibration import NOT_CALIBRATED
from molprop.artifact.panel import PanelDefinition
from molprop.errors import ConfigError, InvalidInputError
from molprop.inference import RowPrediction
from molprop.inference.augment import parse_low_rows
from molprop.inference.screen import SERVICE_NAMES, WorkLimits
from molprop.jobstore import store as job_store

log = logging.getLogger(__name__)

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)
#: not an HTTP status a client sees (it has gone); logged like nginx's "client closed request"
CLIENT_CLOSED = 499


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_models(request: Request) -> dict[str, ServedModel]:
    """The served models (503 while loading); models that fine-tune jobs made are picked up
    from the job database at most every few seconds (``app.state.refresh_models``)."""
    models = getattr(request.app.state, "models", None)
    if models is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "models are still loading")
    refresh = getattr(request.app.state, "refresh_models", None)
    if refresh is not None:
        refresh()
    return models


def get_panels(request: Request) -> dict[str, PanelDefinition]:
    """The panels of the model directory (read at start-up; none before)."""
    return getattr(request.app.state, "panels", None) or {}


def require_api_key(
    settings: Annotated[Settings, Depends(get_settings)],
    key: Annotated[str | None, Depends(_api_key_header)],
) -> Caller:
    """Who calls (:mod:`api.keys`): 401 unless no key is configured (the local single-user
    service) or the ``X-API-Key`` header is one of the configured keys."""
    caller = authenticate(settings.keys, key)
    if caller is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or invalid X-API-Key header",
            headers={"WWW-Authenticate": "APIKey"},
        )
    return caller


#: the caller of a request (FastAPI runs ``require_api_key`` once per request)
CallerDep = Annotated[Caller, Depends(require_api_key)]


def require_admin(caller: CallerDep, action: str) -> None:
    """403 unless ``caller`` has an admin key (or no key is configured)."""
    if not caller.is_admin:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"{action} needs an admin API key (this key is a user key)"
        )


def find_model(name: str, models: dict[str, ServedModel]) -> ServedModel:
    if name not in models:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"unknown model {safe_text(name)!r}; available: {sorted(models)}",
        )
    return models[name]


def summary(model: ServedModel) -> dict:
    return {
        "name": model.name,
        "task": model.task,
        "target": model.target,
        "unit": model.unit,
        "targets": [
            {"name": t, "unit": u, "interval_coverage": model.coverage_info(t)}
            for t, u in zip(model.targets, model.units)
        ],
        "version": model.version,
        "n_members": model.n_members,
        "test_metrics": model.test_metrics,
        "calibration": calibration_text(model),
    }


def calibration_text(model: ServedModel) -> str:
    """What the model's intervals / probabilities are, or that it is not calibrated."""
    calibration = model.predictor.calibration
    return NOT_CALIBRATED if calibration is None else calibration.describe()


def interval_level(body: PredictRequest, model: ServedModel) -> float | None:
    """The request's interval level (422 when the model's calibration set is too small for
    it: a finite conformal interval at level L needs about 1 / (1 - L) molecules)."""
    try:
        return model.predictor.interval_level(body.interval)
    except ConfigError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"interval: {exc}") from None


health_router = APIRouter(tags=["service"])
v1 = APIRouter(
    prefix="/v1",
    tags=["models"],
    dependencies=[Depends(require_api_key)],
    responses={401: {"model": ErrorBody}},
    route_class=StrictJSONRoute,
)


@health_router.get(
    "/health",
    response_model=Health,
    response_model_exclude_none=True,
    responses={503: {"model": ErrorBody}},
)
def health(
    request: Request, models: Annotated[dict[str, ServedModel], Depends(get_models)]
) -> Health:
    """200 once the models are loaded (503 before, or if none could be loaded), with the state
    of the job workers the service runs. ``status`` is ``degraded`` (still 200: predictions
    work) when none of them is alive while jobs wait; they are being restarted (see
    :mod:`api.workers`)."""
    if not models:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "no model could be loaded")
    supervisor = getattr(request.app.state, "workers", None)
    state = None if supervisor is None else supervisor.state()
    if state is None or not state.configured:
        return Health(status="ok", models=sorted(models))
    workers = WorkerHealth(configured=state.configured, alive=state.alive, restarts=state.restarts)
    if state.alive:
        return Health(status="ok", models=sorted(models), workers=workers)
    try:
        waiting = job_store.count_waiting(request.app.state.engine)
    except Exception:
        log.exception("could not count the waiting jobs")
        return Health(
            status="degraded",
            models=sorted(models),
            workers=workers,
            detail="no job worker is alive (restarting); the job database did not answer",
        )
    return Health(
        status="degraded" if waiting else "ok",
        models=sorted(models),
        workers=workers,
        jobs_waiting=waiting,
        detail=f"no job worker is alive (restarting); {waiting or 'no'} job(s) waiting",
    )


@v1.get("/models", response_model=list[ModelSummary])
def list_models(models: Annotated[dict[str, ServedModel], Depends(get_models)]) -> list[dict]:
    """Every served model: name, task, unit, version and test metrics (ensemble)."""
    return [summary(m) for _, m in sorted(models.items())]


@v1.get("/models/{name}", response_model=ModelCard, responses={404: {"model": ErrorBody}})
def model_card(name: str, models: Annotated[dict[str, ServedModel], Depends(get_models)]) -> dict:
    """One model's summary and its card (markdown)."""
    model = find_model(name, models)
    return {**summary(model), "card": model.card}


@v1.get("/panels", response_model=list[PanelSummary])
def list_panels(
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
    panels: Annotated[dict[str, PanelDefinition], Depends(get_panels)],
) -> list[PanelSummary]:
    """Every panel (several models answered together: ``POST /v1/predict`` with
    ``"model": "<panel>"``): its models in display order, the endpoints they answer, and any
    model this service does not serve (the panel cannot be asked for until it does)."""
    return panel_summaries(panels, models)


def _similarity(record: dict) -> float | None:
    """A predicted row's max similarity to the training set (None without a domain)."""
    value = record.get("similarity")
    if value is None or value is pd.NA:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def build_results(
    body: PredictRequest, model: ServedModel, rejected: dict[int, str], frame: pd.DataFrame
) -> list[PredictionResult]:
    """One result per input row, in input order. ``rejected`` maps the rows refused before the
    model to their reason (``invalid_input``, as the predictor reports bad input); ``frame``
    holds the other rows, in order (read by :class:`molprop.inference.RowPrediction`)."""
    rows = iter(cast(list[dict[str, Any]], frame.to_dict("records")))  # str column names
    results = []
    for i, smi in enumerate(body.smiles):
        ident = body.ids[i] if body.ids is not None else None
        ident = safe_text(ident) if isinstance(ident, str) else ident
        similarity = None
        if i in rejected:
            row = RowPrediction.failed(InvalidInputError(rejected[i]))
        else:
            record = next(rows)
            assert model.target is not None  # one-target models only: panels answer the others
            row = RowPrediction.from_frame_row(record, model.target, body.interval)
            similarity = _similarity(record) if row.ok else None
        results.append(
            PredictionResult(
                index=i,
                id=ident,
                smiles=safe_text(smi),
                standardized_smiles=row.standardized_smiles,
                value=row.value,
                uncertainty=row.std,
                percentile=row.percentile,
                in_domain=row.in_domain,
                similarity=similarity,
                interval=None
                if row.interval is None
                else Interval(level=row.interval[0], low=row.interval[1], high=row.interval[2]),
                status=row.status,
                error=None if row.error is None else safe_text(row.error),
            )
        )
    return results


def screen_low(body: PredictRequest, model: ServedModel, rejected: dict[int, str]) -> list | None:
    """The measured low-fidelity labels of the rows not ``rejected`` (a transfer model trained
    on them; None for other models). Rows with a missing or non-numeric value join
    ``rejected`` (the reason names the row); no ``low`` field at all: 422."""
    columns = model.predictor.low_columns
    if not columns:
        return None
    if body.low is None:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"model {model.name!r} was trained on measured low-fidelity labels {columns}: "
            "give one per SMILES in 'low'",
        )
    values, errors = parse_low_rows(body.low, len(body.smiles), columns)
    for i, reason in enumerate(errors):
        if reason and i not in rejected:
            rejected[i] = reason
    return [values[i] for i in range(len(body.smiles)) if i not in rejected]


def work_limits(settings: Settings) -> WorkLimits:
    """The service's work limits (``MOLPROP_MAX_SMILES_LENGTH``, ``MOLPROP_MAX_HEAVY_ATOMS``),
    named as its settings in a refusal."""
    return WorkLimits(settings.max_smiles_length, settings.max_heavy_atoms, SERVICE_NAMES)


def screen_rows(
    smiles: list[str], model: ServedModel, settings: Settings
) -> tuple[dict[int, str], RequestCost]:
    """Rows refused before the model by the pipeline's work limits
    (:class:`molprop.inference.screen.WorkLimits`: too long, not Unicode, too many heavy atoms)
    with their reason, and the work of the others: attention tokens and conformers to embed
    (see :mod:`api.budget`, whose parse also counts the heavy atoms). Runs in a thread."""
    limits = work_limits(settings)
    rejected: dict[int, str] = {}
    for i, smi in enumerate(smiles):
        reason = limits.text_refusal(smi)
        if reason is not None:
            rejected[i] = reason
    todo = [i for i in range(len(smiles)) if i not in rejected]
    total = RequestCost()
    for i, cost in zip(todo, predictor_costs([smiles[i] for i in todo], model.predictor)):
        reason = limits.size_refusal(cost.heavy_atoms)
        if reason is not None:
            rejected[i] = reason
        else:
            total = total.add(cost)
    return rejected, total


def over_budget(cost: RequestCost, model: ServedModel, settings: Settings) -> str:
    """The 413 reason of a request whose work is over ``MOLPROP_MAX_REQUEST_TOKENS``."""
    tokens = (
        f"{cost.tokens} attention tokens ({model.predictor.config.model.token_kind.upper()} "
        "tokens summed over its molecules)"
    )
    if cost.conformer_atoms:
        what = (
            f"{cost.work} tokens of work: {tokens} and {cost.conformer_atoms} atoms whose 3D "
            f"conformer is embedded, {CONFORMER_TOKENS_PER_ATOM} tokens each"
        )
    else:
        what = tokens
    return (
        f"the request has {what}; the limit is {settings.max_request_tokens} "
        "(MOLPROP_MAX_REQUEST_TOKENS): split the request, or submit a job (POST /v1/jobs), "
        "which has no deadline"
    )


def _stopped(exc: JobStopped, settings: Settings) -> HTTPException:
    if exc.reason == "disconnected":
        log.info("client disconnected: prediction stopped")
        return HTTPException(CLIENT_CLOSED, "client closed the connection; prediction stopped")
    return HTTPException(
        status.HTTP_504_GATEWAY_TIMEOUT,
        f"the request did not finish within {settings.request_timeout_s:g} s of its "
        "arrival (MOLPROP_REQUEST_TIMEOUT_S, queueing included); its work was "
        "stopped: send fewer or smaller molecules, or retry later",
    )


async def run_or_refuse(lane: Lane, work, job: Job, request: Request, settings: Settings):
    """Run ``work`` in ``lane`` (:func:`api.scheduler.run_job`) and answer as the service does
    when it cannot: 503 with ``Retry-After`` when the queue is full, 504 past the deadline, 499
    when the client went away."""
    try:
        return await run_job(lane, work, job, request)
    except QueueFull as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"the inference queue is full ({exc.waiting} requests waiting for "
            f"the {exc.lane} workers; MOLPROP_MAX_QUEUE={exc.max_queue}): retry "
            f"after {exc.retry_after} s",
            headers={"Retry-After": str(exc.retry_after)},
        ) from None
    except JobStopped as exc:
        raise _stopped(exc, settings) from None


@v1.post(
    "/predict",
    response_model=PredictResponse | PanelResponse,
    responses=ROW_ENDPOINT_ERRORS,
)
async def predict(
    body: PredictRequest,
    request: Request,
    response: Response,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
    panels: Annotated[dict[str, PanelDefinition], Depends(get_panels)],
) -> PredictResponse | PanelResponse:
    """SMILES -> one result per input row (same order) with the standardised SMILES the model
    read, value, uncertainty, in_domain, the calibrated interval at level ``interval``
    (default 0.9; null: none), status (ok / invalid_input / unsupported / error) and error. Limits (413, per-row invalid_input, 503 when
    the queue is full, 504 past the deadline): see the service settings. Inference runs in a
    worker thread; the ``Server-Timing`` header gives its queue wait and run time.

    A panel (``"model": "admet"``, see ``GET /v1/panels``) or a list of models
    (``"models": [...]``; an unknown one: 422) gives the panel response: per row its status
    and error, every endpoint (value, unit, std, low, high, percentile, in_domain, similarity,
    status, error) in order, and the physchem block."""
    arrival = time.monotonic()
    if is_panel_request(body, models, panels):
        return await _predict_panel(body, request, response, settings, models, panels, arrival)
    model = find_model(str(body.model), models)
    level = interval_level(body, model)
    if len(body.smiles) > settings.max_batch:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{len(body.smiles)} SMILES in one request; the limit is "
            f"{settings.max_batch} (MOLPROP_MAX_BATCH): split the request",
        )
    rejected, cost = await run_in_threadpool(screen_rows, body.smiles, model, settings)
    if cost.work > settings.max_request_tokens:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, over_budget(cost, model, settings))
    low = screen_low(body, model, rejected)
    batch = [s for i, s in enumerate(body.smiles) if i not in rejected]
    frame = pd.DataFrame()
    if batch:
        lanes: dict[str, Lane] = request.app.state.lanes
        lane = lanes["small" if cost.work <= settings.small_request_tokens else "large"]
        job = Job(deadline=arrival + settings.request_timeout_s)

        def work() -> pd.DataFrame:
            return model.predictor.predict(
                batch,
                max_smiles_length=settings.max_smiles_length,
                should_stop=job.should_stop,
                interval=level,
                low=low,
            )

        frame = await run_or_refuse(lane, work, job, request, settings)
        response.headers["Server-Timing"] = job.server_timing()
    results = build_results(body, model, rejected, frame)
    return PredictResponse(
        model=model.name,
        version=model.version,
        unit=model.unit,
        calibration=calibration_text(model),
        results=results,
    )


def _screen_panel_rows(
    smiles: list[str], served: list[ServedModel], settings: Settings
) -> tuple[dict[int, str], RequestCost]:
    """:func:`screen_rows` for every model of a panel: a row refused for one is refused (with
    the first reason), the work is every model's summed. Runs in a thread."""
    rejected: dict[int, str] = {}
    total = RequestCost()
    for model in served:
        refused, cost = screen_rows(smiles, model, settings)
        for i, reason in refused.items():
            rejected.setdefault(i, reason)
        total = add_cost(total, cost)
    return rejected, total


async def _predict_panel(
    body: PredictRequest,
    request: Request,
    response: Response,
    settings: Settings,
    models: dict[str, ServedModel],
    panels: dict[str, PanelDefinition],
    arrival: float,
) -> PanelResponse:
    """``POST /v1/predict`` for a panel or a list of models (see :mod:`api.panel`)."""
    panel, served = requested_panel(body, models, panels)
    try:
        panel.check_interval(body.interval)
    except ConfigError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"interval: {exc}") from None
    if len(body.smiles) > settings.max_batch:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{len(body.smiles)} SMILES in one request; the limit is "
            f"{settings.max_batch} (MOLPROP_MAX_BATCH): split the request",
        )
    rejected, cost = await run_in_threadpool(_screen_panel_rows, body.smiles, served, settings)
    if cost.work > settings.max_request_tokens:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            panel_over_budget(cost, served, settings.max_request_tokens),
        )
    batch = [s for i, s in enumerate(body.smiles) if i not in rejected]
    frame = pd.DataFrame()
    if batch:
        lanes: dict[str, Lane] = request.app.state.lanes
        lane = lanes["small" if cost.work <= settings.small_request_tokens else "large"]
        job = Job(deadline=arrival + settings.request_timeout_s)

        def work() -> pd.DataFrame:
            return panel.predict(
                batch,
                interval=body.interval,
                max_smiles_length=settings.max_smiles_length,
                should_stop=job.should_stop,
            )

        frame = await run_or_refuse(lane, work, job, request, settings)
        response.headers["Server-Timing"] = job.server_timing()
    results = await run_in_threadpool(panel_results, body, panel, rejected, frame)
    return panel_response(body, panel, served, results)
