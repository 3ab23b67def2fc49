"""HTTP routes: ``/health``, ``/v1/models``, ``/v1/models/{name}``, ``/v1/predict``."""

from __future__ import annotations

import asyncio
import math
import secrets
from typing import Annotated

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.security import APIKeyHeader

from api.registry import ServedModel
from api.schemas import (
    ErrorBody,
    Health,
    ModelCard,
    ModelSummary,
    PredictionResult,
    PredictRequest,
    PredictResponse,
)  # fmt: skip
from api.settings import Settings

STATUS_OK, STATUS_INVALID = "ok", "invalid_input"
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)


def safe_text(text: str) -> str:
    """``text`` with anything JSON/UTF-8 cannot carry (lone surrogates) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_models(request: Request) -> dict[str, ServedModel]:
    models = getattr(request.app.state, "models", None)
    if models is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "models are still loading")
    return models


def require_api_key(
    settings: Annotated[Settings, Depends(get_settings)],
    key: Annotated[str | None, Depends(_api_key_header)],
) -> None:
    """401 unless ``MOLPROP_API_KEY`` is unset or the ``X-API-Key`` header matches it."""
    expected = settings.api_key
    if expected is None:
        return
    given = (key or "").encode("utf-8", "surrogatepass")
    if not secrets.compare_digest(given, expected.get_secret_value().encode("utf-8")):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or invalid X-API-Key header",
                            headers={"WWW-Authenticate": "APIKey"})  # fmt: skip


def find_model(name: str, models: dict[str, ServedModel]) -> ServedModel:
    if name not in models:
        raise HTTPException(status.HTTP_404_NOT_FOUND,
                            f"unknown model {safe_text(name)!r}; available: {sorted(models)}")  # fmt: skip
    return models[name]


def summary(model: ServedModel) -> dict:
    return {"name": model.name, "task": model.task, "target": model.target, "unit": model.unit,
            "version": model.version, "n_members": model.n_members,
            "test_metrics": model.test_metrics}  # fmt: skip


health_router = APIRouter(tags=["service"])
v1 = APIRouter(prefix="/v1", tags=["models"], dependencies=[Depends(require_api_key)],
               responses={401: {"model": ErrorBody}})  # fmt: skip


@health_router.get("/health", response_model=Health, responses={503: {"model": ErrorBody}})
def health(models: Annotated[dict[str, ServedModel], Depends(get_models)]) -> Health:
    """200 once the models are loaded (503 before, or if none could be loaded)."""
    if not models:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "no model could be loaded")
    return Health(status="ok", models=sorted(models))


@v1.get("/models", response_model=list[ModelSummary])
def list_models(models: Annotated[dict[str, ServedModel], Depends(get_models)]) -> list[dict]:
    """Every served model: name, task, unit, version and test metrics (ensemble)."""
    return [summary(m) for _, m in sorted(models.items())]


@v1.get("/models/{name}", response_model=ModelCard, responses={404: {"model": ErrorBody}})
def model_card(name: str, models: Annotated[dict[str, ServedModel], Depends(get_models)]) -> dict:
    """One model's summary and its card (markdown)."""
    model = find_model(name, models)
    return {**summary(model), "card": model.card}


def _optional(value: object) -> float | None:
    out = float(value)  # type: ignore[arg-type]
    return out if math.isfinite(out) else None


def build_results(body: PredictRequest, model: ServedModel, rejected: set[int],
                  frame: pd.DataFrame, limit: int) -> list[PredictionResult]:  # fmt: skip
    """One result per input row, in input order. ``frame`` holds the rows not in ``rejected``."""
    target = model.target
    rows = iter(frame.to_dict("records"))
    results = []
    for i, smi in enumerate(body.smiles):
        ident = body.ids[i] if body.ids is not None else None
        ident = safe_text(ident) if isinstance(ident, str) else ident
        common = {"index": i, "id": ident, "smiles": safe_text(smi)}
        if i in rejected:
            reason = (f"SMILES too long ({len(smi)} > {limit} characters)" if len(smi) > limit
                      else "SMILES contains characters that are not valid Unicode")  # fmt: skip
            results.append(PredictionResult(**common, value=None, status=STATUS_INVALID,
                                            error=reason))  # fmt: skip
            continue
        row = next(rows)
        if row["status"] != STATUS_OK:
            results.append(PredictionResult(**common, value=None, status=row["status"],
                                            error=safe_text(str(row["error"])) or None))  # fmt: skip
            continue
        std = row.get(f"{target}_std")
        in_domain = row.get("in_domain")
        results.append(PredictionResult(
            **common, value=float(row[target]), status=STATUS_OK,
            uncertainty=None if std is None else _optional(std),
            in_domain=None if in_domain is None else bool(in_domain),
        ))  # fmt: skip
    return results


@v1.post("/predict", response_model=PredictResponse,
         responses={404: {"model": ErrorBody}, 413: {"model": ErrorBody}})  # fmt: skip
async def predict(
    body: PredictRequest,
    request: Request,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
) -> PredictResponse:
    """SMILES -> one result per input row (same order) with value, uncertainty, in_domain,
    status (ok / invalid_input / error) and error. Inference runs in a worker thread."""
    model = find_model(body.model, models)
    if len(body.smiles) > settings.max_batch:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                            f"{len(body.smiles)} SMILES in one request; the limit is "
                            f"{settings.max_batch} (MOLPROP_MAX_BATCH): split the request")  # fmt: skip
    limit = settings.max_smiles_length
    rejected = {i for i, s in enumerate(body.smiles) if len(s) > limit or not encodable(s)}
    batch = [s for i, s in enumerate(body.smiles) if i not in rejected]
    frame = pd.DataFrame()
    if batch:
        loop = asyncio.get_running_loop()
        frame = await loop.run_in_executor(request.app.state.executor,
                                           model.predictor.predict, batch)  # fmt: skip
    results = build_results(body, model, rejected, frame, limit)
    return PredictResponse(model=model.name, version=model.version, unit=model.unit,
                           results=results)  # fmt: skip
