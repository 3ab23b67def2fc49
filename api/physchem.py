"""``POST /v1/physchem``: RDKit physicochemical properties, drug-likeness rules (Lipinski, Veber)
and structural alerts (PAINS, Brenk, NIH) per SMILES (:mod:`molprop.inference.physchem`), no model.

Limits as ``/v1/predict``: at most ``MOLPROP_MAX_BATCH`` SMILES (413), a SMILES longer than
``MOLPROP_MAX_SMILES_LENGTH`` characters, not valid Unicode, or with more than
``MOLPROP_MAX_HEAVY_ATOMS`` heavy atoms is its row's ``invalid_input``; the work runs in the large lane under the request
deadline (503 when the queue is full, 504 past the deadline). Every row comes back, in order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, status
from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.errors import StrictJSONRoute, safe_text
from api.panel import physchem_groups
from api.routes import get_settings, require_api_key, run_or_refuse, work_limits
from api.scheduler import Job, Lane
from api.schemas import ErrorBody
from api.settings import Settings
from molprop.inference.physchem import UNITS, describe_smiles


class PhyschemRequest(BaseModel):
    """``POST /v1/physchem`` body. ``ids``, if given, has one entry per SMILES."""

    model_config = ConfigDict(extra="forbid")

    smiles: list[str] = Field(..., min_length=1, examples=[["CCO", "CC(=O)Oc1ccccc1C(=O)O"]])
    ids: list[str | int] | None = Field(None, examples=[["ethanol", "aspirin"]])

    @model_validator(mode="after")
    def _ids_match(self) -> PhyschemRequest:
        if self.ids is not None and len(self.ids) != len(self.smiles):
            raise ValueError(f"ids has {len(self.ids)} entries but smiles has {len(self.smiles)}")
        return self


class PhyschemResult(BaseModel):
    """One input row. ``properties``, ``rules`` and ``alerts`` are null exactly when ``status``
    is not ``ok``."""

    index: int
    id: str | int | None = None
    smiles: str
    described_smiles: str | None = Field(
        None, description="the molecule described: the largest organic fragment, neutralised"
    )
    status: str = Field(..., description="ok or invalid_input")
    error: str | None = None
    properties: dict[str, float | int] | None = None
    rules: dict[str, bool | int] | None = Field(
        None, description="lipinski_violations, lipinski_pass (≤ 1 violation), veber_pass"
    )
    alerts: dict[str, list[str]] | None = Field(
        None, description="PAINS, Brenk and NIH alerts by name (empty lists: none)"
    )


class PhyschemResponse(BaseModel):
    units: dict[str, str]
    results: list[PhyschemResult]


physchem_router = APIRouter(
    prefix="/v1",
    tags=["molecules"],
    dependencies=[Depends(require_api_key)],
    responses={401: {"model": ErrorBody}},
    route_class=StrictJSONRoute,
)


def describe_rows(smiles: list[str], settings: Settings) -> list[dict[str, object]]:
    """Each SMILES's row, or its reason for refusal by the service's work limits
    (:func:`api.routes.work_limits`: too long, not Unicode, too many heavy atoms)."""
    limits = work_limits(settings)
    rows: list[dict[str, object]] = []
    for smi in smiles:
        reason = limits.text_refusal(smi)
        if reason is not None:
            rows.append({"status": "invalid_input", "error": reason})
            continue
        row = describe_smiles(smi)
        atoms = row.get("heavy_atoms")
        reason = limits.size_refusal(atoms) if isinstance(atoms, int) else None
        if reason is not None:
            row = {"status": "invalid_input", "error": reason}
        rows.append(row)
    return rows


def _result(i: int, smi: str, ident: str | int | None, row: dict[str, object]) -> PhyschemResult:
    ident = safe_text(ident) if isinstance(ident, str) else ident
    if row["status"] != "ok":
        return PhyschemResult(
            index=i, id=ident, smiles=safe_text(smi), status=str(row["status"]),
            error=safe_text(str(row["error"])),
        )  # fmt: skip
    return PhyschemResult(
        index=i,
        id=ident,
        smiles=safe_text(smi),
        described_smiles=str(row["described_smiles"]),
        status="ok",
        **(physchem_groups(row) or {}),
    )


@physchem_router.post(
    "/physchem",
    response_model=PhyschemResponse,
    responses={413: {"model": ErrorBody}, 503: {"model": ErrorBody}, 504: {"model": ErrorBody}},
)
async def physchem(
    body: PhyschemRequest,
    request: Request,
    settings: Annotated[Settings, Depends(get_settings)],
) -> PhyschemResponse:
    """SMILES -> properties, drug-likeness rules and structural alerts per input row (same
    order), with status (ok / invalid_input) and error. Limits: see the module docstring."""
    arrival = time.monotonic()
    if len(body.smiles) > settings.max_batch:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{len(body.smiles)} SMILES in one request; the limit is "
            f"{settings.max_batch} (MOLPROP_MAX_BATCH): split the request",
        )
    lanes: dict[str, Lane] = request.app.state.lanes
    job = Job(deadline=arrival + settings.request_timeout_s)
    rows = await run_or_refuse(
        lanes["large"], lambda: describe_rows(body.smiles, settings), job, request, settings
    )
    ids: Sequence[str | int | None] = body.ids or [None] * len(body.smiles)
    results = [_result(i, s, ids[i], r) for i, (s, r) in enumerate(zip(body.smiles, rows))]
    return PhyschemResponse(units=dict(UNITS), results=results)
