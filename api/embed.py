"""``POST /v1/embed``: each molecule's embedding, the encoder's pooled vector that the model's
head reads (``molprop.inference.Predictor.embed``: ensemble member 0), for similarity search
and clustering.

Same body, limits and lanes as ``/v1/predict``: at most ``MOLPROP_MAX_BATCH`` SMILES and
``MOLPROP_MAX_REQUEST_TOKENS`` attention tokens (413), rows screened before the model (too
long, not Unicode, too many heavy atoms: per-row ``invalid_input``), the ``small`` or ``large``
lane by tokens, the same deadline (504) and queue (503). Every row comes back, in order, with
its status; a failed row has ``embedding: null`` and its reason.
"""

from __future__ import annotations

import math
import time
from typing import Annotated

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from api.errors import StrictJSONRoute, safe_text
from api.registry import ServedModel
from api.routes import (
    find_model,
    get_models,
    get_settings,
    over_budget,
    require_api_key,
    run_or_refuse,
    screen_rows,
)
from api.scheduler import Job, Lane
from api.schemas import ROW_ENDPOINT_ERRORS, ErrorBody, Status
from api.settings import Settings
from molprop.errors import ConfigError


class EmbedRequest(BaseModel):
    """``POST /v1/embed`` body. ``ids``, if given, has one entry per SMILES."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(..., min_length=1, max_length=200, examples=["solubility"])
    smiles: list[str] = Field(..., min_length=1, examples=[["CCO", "c1ccccc1O"]])
    ids: list[str | int] | None = Field(None, examples=[["ethanol", "phenol"]])

    @model_validator(mode="after")
    def _ids_match(self) -> EmbedRequest:
        if self.ids is not None and len(self.ids) != len(self.smiles):
            raise ValueError(f"ids has {len(self.ids)} entries but smiles has {len(self.smiles)}")
        return self


class EmbedResult(BaseModel):
    """One input row. ``embedding`` is null exactly when ``status`` is not ``ok``."""

    index: int
    id: str | int | None = None
    smiles: str
    status: Status
    error: str | None = None
    embedding: list[float] | None = Field(None, description="``dim`` numbers")


class EmbedResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    version: str
    dim: int = Field(..., description="length of every embedding")
    description: str
    results: list[EmbedResult]


embed_router = APIRouter(
    prefix="/v1",
    tags=["models"],
    dependencies=[Depends(require_api_key)],
    responses={401: {"model": ErrorBody}},
    route_class=StrictJSONRoute,
)


def build_embed_results(
    body: EmbedRequest, rejected: dict[int, str], frame: pd.DataFrame
) -> list[EmbedResult]:
    """One result per input row, in order (``rejected``: rows refused before the model;
    ``frame``: :meth:`Predictor.embed`'s rows for the others, in order)."""
    columns = [c for c in frame.columns if c.startswith("emb_")]
    rows = iter(range(len(frame)))
    results = []
    for i, smi in enumerate(body.smiles):
        ident = body.ids[i] if body.ids is not None else None
        ident = safe_text(ident) if isinstance(ident, str) else ident
        if i in rejected:
            row_status, error, vector = "invalid_input", rejected[i], None
        else:
            k = next(rows)
            row_status, error = str(frame["status"].iat[k]), str(frame["error"].iat[k])
            values = frame[columns].iloc[k].to_numpy(dtype=float).tolist()
            ok = row_status == "ok" and all(math.isfinite(v) for v in values)
            vector = values if ok else None
        results.append(
            EmbedResult(
                index=i,
                id=ident,
                smiles=safe_text(smi),
                status=row_status,
                error=safe_text(error) if error else None,
                embedding=vector,
            )
        )
    return results


@embed_router.post(
    "/embed",
    response_model=EmbedResponse,
    responses=ROW_ENDPOINT_ERRORS,
)
async def embed(
    body: EmbedRequest,
    request: Request,
    response: Response,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
) -> EmbedResponse:
    """SMILES -> one embedding per input row (same order) with status (ok / invalid_input /
    error) and error. Limits: as ``/v1/predict`` (see the module docstring)."""
    arrival = time.monotonic()
    model = find_model(body.model, models)
    if len(body.smiles) > settings.max_batch:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{len(body.smiles)} SMILES in one request; the limit is "
            f"{settings.max_batch} (MOLPROP_MAX_BATCH): split the request",
        )
    rejected, cost = await run_in_threadpool(screen_rows, body.smiles, model, settings)
    if cost.work > settings.max_request_tokens:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, over_budget(cost, model, settings))
    batch = [s for i, s in enumerate(body.smiles) if i not in rejected]
    frame = pd.DataFrame()
    if batch:
        lanes: dict[str, Lane] = request.app.state.lanes
        lane = lanes["small" if cost.work <= settings.small_request_tokens else "large"]
        job = Job(deadline=arrival + settings.request_timeout_s)

        def work() -> pd.DataFrame:
            return model.predictor.embed(
                batch, max_smiles_length=settings.max_smiles_length, should_stop=job.should_stop
            )

        try:
            frame = await run_or_refuse(lane, work, job, request, settings)
        except ConfigError as exc:  # e.g. a model served on a backend without embeddings
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
        response.headers["Server-Timing"] = job.server_timing()
    return EmbedResponse(
        model=model.name,
        version=model.version,
        dim=model.predictor.embedding_dim,
        description="the encoder's pooled vector (readout output the head reads) of "
        "ensemble member 0",
        results=build_embed_results(body, rejected, frame),
    )
