"""The web page for chemists: ``GET /`` (Jinja2, server-rendered), its two static files and
``GET /web/molecule.svg`` (an RDKit drawing of one SMILES).

The page is a client of the public API: its JavaScript (``api/static/web.js``) sends small
inputs to ``POST /v1/predict`` and inputs of more than ``MOLPROP_WEB_JOB_ROWS`` rows to
``POST /v1/jobs``, polling ``GET /v1/jobs/{id}`` for the progress bar. Everything the caller
typed or uploaded is inserted as text (``textContent``), never as HTML; the page's
Content-Security-Policy allows scripts and styles from this origin only, so even a bug there
would not run injected code. Nothing is loaded from outside the machine.

Settings (environment, defaults in brackets):

- ``MOLPROP_WEB_JOB_ROWS`` [100]: inputs with more rows become jobs (capped at
  ``MOLPROP_MAX_BATCH``, the most ``/v1/predict`` takes).
- ``MOLPROP_WEB_TABLE_ROWS`` [500]: most rows of a job's results shown in the table (all of
  them are in the downloaded CSV).
- ``MOLPROP_WEB_POLL_MS`` [500]: how often the page asks for a job's progress.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from api.registry import ServedModel
from api.routes import get_settings, summary
from api.settings import ENV_PREFIX, Settings
from molprop.errors import InvalidInputError
from molprop.inference import molecule_svg

HERE = Path(__file__).resolve().parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")
#: the only files ``/static/`` serves (no path from the request reaches the file system)
STATIC_FILES = {
    "web.js": "text/javascript; charset=utf-8",
    "web.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
#: the page runs only its own script and style; pictures from this origin (and blob: for the
#: CSV download); fetch() only to this origin
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: an SVG opened on its own runs nothing and loads nothing
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'"
#: markdown -> HTML for model cards: raw HTML in a card is escaped, not passed through
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


class WebSettings(BaseSettings):
    """The page's settings (``MOLPROP_WEB_*``; see the module docstring)."""

    model_config = SettingsConfigDict(env_prefix=f"{ENV_PREFIX}WEB_")

    job_rows: int = Field(100, ge=1, description="inputs with more rows become jobs")
    table_rows: int = Field(500, ge=1, description="most job result rows shown in the table")
    poll_ms: int = Field(500, ge=50, description="job progress polling interval (ms)")


def _page_order(model: ServedModel) -> tuple[bool, str]:
    return model.published, model.name


def card_html(markdown: str) -> Markup:
    """A model card (markdown) as HTML; HTML inside the card is shown as text."""
    return Markup(_MARKDOWN.render(markdown))


@functools.lru_cache(maxsize=512)  # at most ~100 kB each (MOLPROP_MAX_HEAVY_ATOMS = 200)
def _drawing(smiles: str, max_length: int, max_heavy_atoms: int) -> str:
    return molecule_svg(smiles, max_length=max_length, max_heavy_atoms=max_heavy_atoms)


def web_router(web: WebSettings | None = None) -> APIRouter:
    """The page's routes; ``web`` defaults to the environment."""
    web = web or WebSettings()
    router = APIRouter(tags=["web page"])

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> Response:
        models: dict[str, ServedModel] | None = getattr(request.app.state, "models", None)
        # the model directory's models first: the first is the form's default, which a
        # published (fine-tuned) model never becomes while there is another
        served = [] if models is None else sorted(models.values(), key=_page_order)
        config = {
            "models": [summary(m) for m in served],
            "jobRows": min(web.job_rows, settings.max_batch),
            "tableRows": web.table_rows,
            "pollMs": web.poll_ms,
            "needsKey": bool(settings.keys),
        }
        response = TEMPLATES.TemplateResponse(
            request,
            "index.html",
            {
                "models": served,
                "cards": {m.name: card_html(m.card) for m in served},
                "config": config,
                "loading": models is None,
                "job_rows": config["jobRows"],
            },
            status_code=200 if served else 503,
        )
        response.headers["Content-Security-Policy"] = PAGE_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @router.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(HERE / "static" / name, media_type=STATIC_FILES[name])

    @router.get(
        "/web/molecule.svg",
        include_in_schema=False,  # a helper of the page, not part of the /v1 API
        response_class=Response,
        responses={
            200: {"content": {"image/svg+xml": {}}, "description": "the molecule drawn"},
            422: {"content": {"text/plain": {}}, "description": "the SMILES does not parse"},
        },
    )
    def molecule(
        smiles: Annotated[str, Query(min_length=1, description="one SMILES")],
        settings: Annotated[Settings, Depends(get_settings)],
    ) -> Response:
        """An RDKit 2D drawing of ``smiles`` (SVG); 422 with the reason when it does not parse,
        is longer than ``MOLPROP_MAX_SMILES_LENGTH`` or has more than
        ``MOLPROP_MAX_HEAVY_ATOMS`` heavy atoms."""
        headers = {"Content-Security-Policy": SVG_CSP, "X-Content-Type-Options": "nosniff"}
        try:
            svg = _drawing(smiles, settings.max_smiles_length, settings.max_heavy_atoms)
        except InvalidInputError as exc:
            return Response(str(exc), 422, headers, media_type="text/plain")
        headers["Cache-Control"] = "max-age=86400"
        return Response(svg, headers=headers, media_type="image/svg+xml")

    return router
