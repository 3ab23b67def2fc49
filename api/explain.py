"""``POST /v1/explain``: per-atom attributions of a model's predictions, with pictures.

Integrated Gradients on the token embedding layer (``molprop.inference.explain``): each row
gets the atoms' weights (regression: target units; classifier: logit), the prediction, the
baseline prediction, the completeness delta and an RDKit similarity map (SVG).

An explanation costs ``EXPLAIN_STEPS`` forward and backward passes per member where a
prediction costs one forward pass, so requests are capped harder than ``/v1/predict``: at most
``MOLPROP_MAX_EXPLAIN_BATCH`` SMILES (and ``MOLPROP_MAX_BATCH``; more: 413), at most
``MOLPROP_MAX_REQUEST_TOKENS`` attention tokens counted ``EXPLAIN_STEPS`` times (413), every
request in the ``large`` lane, and the rows are screened as for prediction (too long, not
Unicode, too many heavy atoms: per-row ``invalid_input``), under the same deadline (504).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from api.errors import StrictJSONRoute, safe_text
from api.registry import ServedModel
from api.routes import (
    find_model,
    get_models,
    get_settings,
    require_api_key,
    run_or_refuse,
    screen_rows,
)
from api.scheduler import Job, Lane
from api.schemas import ROW_ENDPOINT_ERRORS, ErrorBody, Status
from api.settings import Settings
from molprop.errors import ConfigError, InvalidInputError
from molprop.inference import failure_status
from molprop.inference.explain import Explanation

log = logging.getLogger(__name__)

#: integration steps per member and molecule (doubled at most once, to ``2 * EXPLAIN_STEPS``,
#: when completeness misses 1 %); the token budget counts each token this many times
EXPLAIN_STEPS = 64


class ExplainRequest(BaseModel):
    """``POST /v1/explain`` body. ``ids``, if given, has one entry per SMILES."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(..., min_length=1, max_length=200, examples=["solubility"])
    smiles: list[str] = Field(..., min_length=1, examples=[["c1ccccc1O"]])
    ids: list[str | int] | None = Field(None, examples=[["phenol"]])
    svg: bool = Field(True, description="include an SVG similarity map per molecule")
    target: str | None = Field(
        None,
        max_length=200,
        description="the target explained: needed for a multitask model (one of its targets, "
        "GET /v1/models); a one-target model's own target, or null",
    )

    @model_validator(mode="after")
    def _ids_match(self) -> ExplainRequest:
        if self.ids is not None and len(self.ids) != len(self.smiles):
            raise ValueError(f"ids has {len(self.ids)} entries but smiles has {len(self.smiles)}")
        return self


class AtomAttribution(BaseModel):
    index: int = Field(
        ...,
        description="RDKit atom index in standardized_smiles (the SMILES as written when "
        "the chemistry checks changed nothing)",
    )
    element: str
    weight: float


class ExplainResult(BaseModel):
    """One input row; the numbers are null and ``atoms`` empty when ``status`` is not ok."""

    index: int
    id: str | int | None = None
    smiles: str
    standardized_smiles: str | None = Field(
        None,
        description="the molecule explained, as /v1/predict reads it (the input itself when "
        "the chemistry checks changed nothing); null when the row failed",
    )
    status: Status
    error: str | None = None
    value: float | None = Field(None, description="the prediction, as /v1/predict gives it")
    prediction: float | None = Field(
        None, description="explained quantity (target units, or the logit of a classifier)"
    )
    baseline: float | None = Field(None, description="the same with every token feature zero")
    delta: float | None = Field(
        None, description="completeness: sum of the weights - (prediction - baseline)"
    )
    atoms: list[AtomAttribution] = Field(default_factory=list)
    svg: str | None = Field(None, description="RDKit similarity map of the weights")


class ExplainResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    version: str
    target: str = Field("", description="the target explained")
    unit: str
    space: Literal["target", "logit"] = Field(
        ..., description="units of the weights: the target's, or the classifier's logit"
    )
    method: str
    results: list[ExplainResult]


explain_router = APIRouter(
    prefix="/v1",
    tags=["models"],
    dependencies=[Depends(require_api_key)],
    responses={401: {"model": ErrorBody}},
    route_class=StrictJSONRoute,
)


def explained_target(body: ExplainRequest, model: ServedModel) -> str:
    """The target ``body`` asks to explain: 422 for a multitask model without one, or a
    target the model does not predict."""
    if body.target is None and model.multitask:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"model {model.name!r} predicts several targets {list(model.targets)}: name the "
            "one to explain in 'target'",
        )
    if body.target is None:
        return model.targets[0]
    try:  # a former name of a renamed target is still accepted (with a warning)
        return model.predictor.config.task.resolve_target(body.target)
    except ConfigError:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"model {model.name!r} does not predict {safe_text(body.target)!r}; its targets: "
            f"{list(model.targets)}",
        ) from None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _picture(e: Explanation) -> str | None:
    try:
        return e.svg()
    except Exception:  # a drawing failure loses the picture, not the row
        log.exception("similarity map failed for %r", e.smiles)
        return None


def build_explain_results(
    body: ExplainRequest, rejected: dict[int, str], explanations: list[Explanation]
) -> list[ExplainResult]:
    """One result per input row, in order (``rejected``: rows refused before the model)."""
    done = iter(explanations)
    results = []
    for i, smi in enumerate(body.smiles):
        ident = body.ids[i] if body.ids is not None else None
        ident = safe_text(ident) if isinstance(ident, str) else ident
        if i in rejected:
            reason = InvalidInputError(rejected[i])
            e = Explanation(smi, failure_status(reason), str(reason))
        else:
            e = next(done)
        results.append(
            ExplainResult(
                index=i,
                id=ident,
                smiles=safe_text(smi),
                standardized_smiles=safe_text(e.smiles) if e.ok else None,
                status=e.status,
                error=None if e.error is None else safe_text(e.error),
                value=_finite(e.value),
                prediction=_finite(e.prediction),
                baseline=_finite(e.baseline),
                delta=_finite(e.delta),
                atoms=[
                    AtomAttribution(index=a.index, element=a.element, weight=a.weight)
                    for a in e.atoms
                ],
                svg=_picture(e) if (body.svg and e.ok) else None,
            )
        )
    return results


@explain_router.post(
    "/explain",
    response_model=ExplainResponse,
    responses=ROW_ENDPOINT_ERRORS,
)
async def explain(
    body: ExplainRequest,
    request: Request,
    response: Response,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
) -> ExplainResponse:
    """SMILES -> per-atom weights of the prediction (Integrated Gradients on the token
    embedding layer, ensemble members averaged), the prediction, its baseline, the completeness
    delta, status and error per row, and an SVG similarity map. Limits: see the module
    docstring (413 over ``MOLPROP_MAX_EXPLAIN_BATCH`` SMILES or the token budget)."""
    arrival = time.monotonic()
    model = find_model(body.model, models)
    target = explained_target(body, model)
    cap = min(settings.max_explain_batch, settings.max_batch)
    if len(body.smiles) > cap:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{len(body.smiles)} SMILES in one explain request; the limit is {cap} "
            "(MOLPROP_MAX_EXPLAIN_BATCH / MOLPROP_MAX_BATCH): split the request",
        )
    if model.predictor.config.featurizer.kind != "2d":
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"model {model.name} cannot be explained: only models with the 2D featuriser are",
        )
    rejected, screened = await run_in_threadpool(screen_rows, body.smiles, model, settings)
    tokens = screened.tokens  # 2D models only: no conformers
    cost = tokens * EXPLAIN_STEPS
    if cost > settings.max_request_tokens:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"the request has {tokens} attention tokens, {cost} counted {EXPLAIN_STEPS} "
            f"times for an explanation; the limit is {settings.max_request_tokens} "
            "(MOLPROP_MAX_REQUEST_TOKENS): send fewer or smaller molecules",
        )
    batch = [s for i, s in enumerate(body.smiles) if i not in rejected]
    explanations: list[Explanation] = []
    if batch:
        lane: Lane = request.app.state.lanes["large"]
        job = Job(deadline=arrival + settings.request_timeout_s)

        def work() -> list[Explanation]:
            return model.predictor.explain(
                batch,
                target=target,
                n_steps=EXPLAIN_STEPS,
                max_steps=2 * EXPLAIN_STEPS,
                max_smiles_length=settings.max_smiles_length,
                should_stop=job.should_stop,
            )

        try:
            explanations = await run_or_refuse(lane, work, job, request, settings)
        except ConfigError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
        response.headers["Server-Timing"] = job.server_timing()
    results = build_explain_results(body, rejected, explanations)
    return ExplainResponse(
        model=model.name,
        version=model.version,
        target=target,
        unit=model.units[model.targets.index(target)],
        space="logit" if model.task == "classification" else "target",
        method="Integrated Gradients (Captum) on the token embedding layer's input, "
        "baseline zero features, ESA bond tokens resolved onto their atoms, ensemble members "
        "averaged",
        results=results,
    )
