"""Bad request bodies give 422, never 500, and 422 bodies never echo the whole input.

* :class:`StrictJSONRoute` parses JSON bodies strictly: ``NaN``, ``Infinity``, numbers that
  overflow a float, integers of more than 4300 digits and nesting too deep for the parser are
  JSON errors (422) instead of values that break later (Python's ``json`` accepts ``NaN``, and a
  ``NaN`` echoed in an error body made the response itself fail with 500).
* :func:`validation_error` answers 422 with pydantic's error list cut to ``MAX_ERRORS`` entries,
  each ``input`` replaced by a short, JSON-safe summary (at most ``MAX_INPUT_CHARS`` characters).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

MAX_ERRORS = 20
MAX_INPUT_CHARS = 100


def safe_text(text: str) -> str:
    """``text`` with anything JSON/UTF-8 cannot carry (lone surrogates) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def strict_json_loads(body: bytes) -> Any:
    """``json.loads`` that raises ``json.JSONDecodeError`` for anything not plain, finite JSON."""
    try:
        return json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("JSON nested too deeply", "", 0) from None
    except ValueError as exc:  # the hooks above, int digit limit, body not UTF-8/16/32
        raise json.JSONDecodeError(str(exc)[:200], "", 0) from None


class StrictJSONRequest(Request):
    """A request whose ``json()`` is :func:`strict_json_loads`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json_loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """Route whose JSON body is parsed by :func:`strict_json_loads` (errors: 422)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler


def _short_text(text: str, limit: int = MAX_INPUT_CHARS) -> str:
    text = safe_text(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def summarize(value: Any) -> Any:
    """A short JSON-safe stand-in for ``value``: small scalars as they are, long strings cut,
    non-finite floats as strings, arrays and objects described by size and keys."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 300 else "a very large integer"
        return value if len(text) <= 30 else _short_text(text)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return _short_text(value)
    if isinstance(value, (list, tuple)):
        return f"<array of {len(value)} items>"
    if isinstance(value, dict):
        keys = ", ".join(_short_text(str(k))[:40] for k in list(value)[:10])
        more = ", ..." if len(value) > 10 else ""
        return f"<object with keys: {keys}{more}>"
    return f"<{type(value).__name__}>"


def clean_error(error: dict[str, Any]) -> dict[str, Any]:
    """One pydantic/FastAPI error entry made short and JSON-safe."""
    out: dict[str, Any] = {
        "type": str(error.get("type", "")),
        "loc": [summarize(part) for part in error.get("loc", ())],
        "msg": _short_text(str(error.get("msg", "")), limit=500),
    }
    if "input" in error:
        out["input"] = summarize(error["input"])
    ctx = error.get("ctx")
    if isinstance(ctx, dict):
        out["ctx"] = {
            str(k): summarize(v if isinstance(v, (int, float, str)) else str(v))
            for k, v in ctx.items()
        }
    return out


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with at most ``MAX_ERRORS`` cleaned errors (``errors_not_shown`` counts the rest)."""
    errors = list(exc.errors())
    body: dict[str, Any] = {"detail": [clean_error(e) for e in errors[:MAX_ERRORS]]}
    if len(errors) > MAX_ERRORS:
        body["errors_not_shown"] = len(errors) - MAX_ERRORS
    return JSONResponse(body, status_code=422)
