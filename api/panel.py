"""Panels in the service: ``POST /v1/predict`` with a panel's name (``"model": "admet"``) or a list
of models (``"models": ["solubility", "lipophilicity"]``), and ``GET /v1/panels``.

A multitask model (several targets) asked for by name (``"model": "admet_tox21"``) is answered
the same way, as a panel of that one model (``panel`` null, as for a list): one endpoint per
target, each with its own unit.

A panel request is answered by the served models themselves (nothing is loaded again), composed
per request into a :class:`molprop.inference.Panel`: one result per input row with every
endpoint (each target of each model, in order) and the physchem block. The panels are the panel
files of the model directory (:mod:`molprop.artifact.panel`), read at start-up; a model name
comes before a panel of the same name. Limits as for one model: at most ``MOLPROP_MAX_BATCH``
SMILES; the rows the single-model path refuses before the model (too long, too many heavy atoms)
are ``invalid_input`` for every endpoint; the work is the sum of every model's tokens
(``MOLPROP_MAX_REQUEST_TOKENS``, 413 above it), and picks the lane.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pandas as pd
from fastapi import HTTPException, status

from api.budget import CONFORMER_TOKENS_PER_ATOM, RequestCost
from api.errors import safe_text
from api.registry import ServedModel
from api.schemas import (
    EndpointResult,
    PanelEndpoint,
    PanelModel,
    PanelPhyschem,
    PanelResponse,
    PanelResult,
    PanelSummary,
    PredictRequest,
)
from molprop.artifact.calibration import NOT_CALIBRATED
from molprop.artifact.panel import PanelDefinition, endpoint_owners
from molprop.errors import ConfigError
from molprop.inference import Panel
from molprop.inference.panel import Endpoint
from molprop.inference.physchem import ALERT_SETS, PROPERTIES, RULES, UNITS
from molprop.inference.rows import STATUS_INVALID, STATUS_OK


def _unprocessable(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail)


def is_panel_request(
    body: PredictRequest, models: Mapping[str, ServedModel], panels: Mapping[str, object]
) -> bool:
    """True for a list of models, a multitask model (answered as a panel of itself: one
    endpoint per target), or a panel's name that no served model has."""
    if body.models is not None:
        return True
    if body.model in models:
        return models[str(body.model)].multitask
    return body.model in panels


def requested_panel(
    body: PredictRequest,
    models: Mapping[str, ServedModel],
    panels: Mapping[str, PanelDefinition],
) -> tuple[Panel, list[ServedModel]]:
    """The panel a request names, composed of the served models -> (panel, its models);
    422 naming the models this service does not serve, or why they cannot be a panel."""
    names: Sequence[str]
    served_by: Mapping[str, str] = {}
    if body.models is not None:
        name, description, names = "", "", list(body.models)
    elif body.model in models:  # a multitask model: a panel of that one model
        name, description, names = "", "", [str(body.model)]
    else:
        definition = panels[str(body.model)]
        name, description, names = definition.name, definition.description, definition.models
        served_by = definition.served_by
    unknown = [safe_text(m) for m in names if m not in models]
    if unknown:
        what = f"panel {name!r} needs" if name else "unknown"
        raise _unprocessable(
            f"{what} model(s) {unknown}: not served here; available: {sorted(models)}"
        )
    served = [models[m] for m in names]
    try:
        panel = Panel(name, tuple(m.predictor for m in served), description, served_by=served_by)
    except ConfigError as exc:
        raise _unprocessable(safe_text(str(exc))) from None
    return panel, served


def add_cost(total: RequestCost, cost: RequestCost) -> RequestCost:
    return RequestCost(total.tokens + cost.tokens, total.conformer_atoms + cost.conformer_atoms)


def panel_over_budget(cost: RequestCost, served: Sequence[ServedModel], limit: int) -> str:
    """The 413 reason of a panel request whose work is over ``MOLPROP_MAX_REQUEST_TOKENS``."""
    what = f"{cost.tokens} attention tokens summed over its molecules and {len(served)} models"
    if cost.conformer_atoms:
        what += (
            f" and {cost.conformer_atoms} atoms whose 3D conformer is embedded, "
            f"{CONFORMER_TOKENS_PER_ATOM} tokens each ({cost.work} in all)"
        )
    names = ", ".join(m.name for m in served)
    return (
        f"the request has {what} ({names}); the limit is {limit} "
        "(MOLPROP_MAX_REQUEST_TOKENS): send fewer molecules or models"
    )


def _number(value: object) -> float | None:
    """A finite float, or None (missing, NaN)."""
    if value is None or value is pd.NA:
        return None
    number = float(value)  # type: ignore[arg-type]
    return number if math.isfinite(number) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _flag(value: object) -> bool | None:
    return None if value is None or value is pd.NA else bool(value)


def _endpoint(record: Mapping[str, object], endpoint: Endpoint) -> EndpointResult:
    """``endpoint`` of one row of the panel's frame: its own status where the panel keeps one,
    else ``ok`` where it has a value and the row's status where not (an endpoint has a value
    exactly when its model predicted the row)."""
    target = endpoint.target
    value = _number(record[target])
    if f"{target}_status" in record:
        row_status, error = str(record[f"{target}_status"]), _text(record[f"{target}_error"])
    elif value is not None:
        row_status, error = STATUS_OK, None
    else:
        row_status, error = str(record["status"]), _text(record["error"])
    ok = row_status == STATUS_OK
    return EndpointResult(
        target=target,
        model=endpoint.model,
        value=value if ok else None,
        unit=endpoint.unit,
        std=_number(record[f"{target}_std"]) if ok else None,
        low=_number(record[f"{target}_low"]) if ok else None,
        high=_number(record[f"{target}_high"]) if ok else None,
        percentile=_number(record[f"{target}_percentile"]) if ok else None,
        in_domain=_flag(record[f"{target}_in_domain"]) if ok else None,
        similarity=_number(record[f"{target}_similarity"]) if ok else None,
        status=row_status,
        error=None if error is None else safe_text(error),
    )


def physchem_groups(record: Mapping[str, object]) -> dict[str, dict] | None:
    """A physchem row (:func:`molprop.inference.physchem.describe_smiles`, or a panel frame's
    record) as ``properties``, ``rules`` and ``alerts``; None where nothing was described."""
    if not isinstance(record.get("described_smiles"), str):
        return None
    properties: dict[str, float | int | None] = {}
    for name in PROPERTIES:
        value = record[name]
        if isinstance(value, bool) or value is None or value is pd.NA:
            properties[name] = None
        elif isinstance(value, int):
            properties[name] = value
        else:
            properties[name] = _number(value)
    rules: dict[str, bool | int | None] = {}
    for name in RULES:
        value = record[name]
        rules[name] = None if value is None or value is pd.NA else value  # type: ignore[assignment]
    alerts = {
        name: [a for a in str(record[f"{name}_alerts"]).split("; ") if a] for name in ALERT_SETS
    }
    return {"properties": properties, "rules": rules, "alerts": alerts}


def panel_results(
    body: PredictRequest, panel: Panel, rejected: dict[int, str], frame: pd.DataFrame
) -> list[PanelResult]:
    """One result per input row, in input order. ``rejected``: the rows refused before the
    models, with their reason (``invalid_input`` for every endpoint); ``frame``: the panel's
    rows for the others, in order."""
    rows = iter(cast(list[dict[str, Any]], frame.to_dict("records")))  # str column names
    results = []
    for i, smi in enumerate(body.smiles):
        ident = body.ids[i] if body.ids is not None else None
        ident = safe_text(ident) if isinstance(ident, str) else ident
        if i in rejected:
            reason = safe_text(rejected[i])
            endpoints = [
                EndpointResult(target=e.target, model=e.model, value=None, unit=e.unit,
                               status=STATUS_INVALID, error=reason)
                for e in panel.endpoints
            ]  # fmt: skip
            results.append(
                PanelResult(index=i, id=ident, smiles=safe_text(smi), status=STATUS_INVALID,
                            error=reason, endpoints=endpoints)
            )  # fmt: skip
            continue
        record = next(rows)
        groups = physchem_groups(record)
        physchem = None
        if groups is not None:
            physchem = PanelPhyschem(described_smiles=str(record["described_smiles"]), **groups)
        error = _text(record["error"])
        results.append(
            PanelResult(
                index=i,
                id=ident,
                smiles=safe_text(smi),
                standardized_smiles=_text(record["standardized_smiles"]),
                status=str(record["status"]),
                error=None if error is None else safe_text(error),
                endpoints=[_endpoint(record, e) for e in panel.endpoints],
                physchem=physchem,
            )
        )
    return results


def panel_response(
    body: PredictRequest,
    panel: Panel,
    served: Sequence[ServedModel],
    results: list[PanelResult],
) -> PanelResponse:
    return PanelResponse(
        panel=panel.name or None,
        description=panel.description,
        interval=body.interval,
        models=[
            PanelModel(
                name=m.name,
                version=m.version,
                targets=m.predictor.target_names,
                calibration=NOT_CALIBRATED
                if m.predictor.calibration is None
                else m.predictor.calibration.describe(),
            )
            for m in served
        ],
        physchem_units=dict(UNITS),
        results=results,
    )


def _screens_alike(served: Sequence[ServedModel], served_by: Mapping[str, str]) -> bool:
    """True when the served models read and refuse molecules alike (one status per row)."""
    if len(served) < 2:
        return True
    try:
        return Panel("", tuple(m.predictor for m in served), served_by=served_by).screens_alike
    except ConfigError:  # models that cannot be a panel (clashing targets): asked for, a 422
        return True


def panel_summaries(
    panels: Mapping[str, PanelDefinition], models: Mapping[str, ServedModel]
) -> list[PanelSummary]:
    """Every panel, with the endpoints of its served models and the models it lacks."""
    out = []
    for name, definition in sorted(panels.items()):
        present = [m for m in definition.models if m in models]
        served_by = {t: m for t, m in definition.served_by.items() if m in models}
        owners = endpoint_owners([(m, models[m].targets) for m in present], served_by)
        endpoints = [
            PanelEndpoint(
                target=target,
                model=model,
                unit=dict(zip(models[model].targets, models[model].units)).get(target, ""),
                task=models[model].task,
                interval_coverage=models[model].coverage_info(target),
            )
            for target, model in owners
        ]
        out.append(
            PanelSummary(
                name=name,
                description=definition.description,
                models=list(definition.models),
                endpoints=endpoints,
                missing=[m for m in definition.models if m not in models],
                endpoint_status=not _screens_alike([models[m] for m in present], served_by),
            )
        )
    return out
