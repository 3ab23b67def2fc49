"""The web page for chemists: ``GET /`` (Jinja2, server-rendered), its two static files and
``GET /web/molecule.svg`` (an RDKit drawing of one SMILES).

Drawings need no key, so they are budgeted like predictions: they are drawn on a lane of their
own (``draw``: ``MOLPROP_WEB_DRAW_WORKERS`` threads, ``MOLPROP_WEB_DRAW_QUEUE`` waiting, more:
503 with ``Retry-After``; past ``MOLPROP_REQUEST_TIMEOUT_S``: 504), at most
``MOLPROP_MAX_HEAVY_ATOMS`` heavy atoms, and the last ``MOLPROP_WEB_DRAW_CACHE`` drawings are
kept (an LRU cache keyed by the SMILES and the limits it was drawn under): a cached drawing is
answered at once, with the same bytes, without a worker.

The page is a client of the public API: its JavaScript (``api/static/web.js``) sends small
inputs to ``POST /v1/predict`` and inputs of more than ``MOLPROP_WEB_JOB_ROWS`` rows to
``POST /v1/jobs``, polling ``GET /v1/jobs/{id}`` for the progress bar. A panel (``GET
/v1/panels``) or a multitask model is answered by ``POST /v1/predict`` (the panel response, a
request per ``MOLPROP_WEB_JOB_ROWS`` rows) and shown as the panel view: every endpoint with its
unit, interval, domain flag and percentile among approved drugs, a radar plot of the
percentiles (an inline SVG the script draws), the physchem block and alerts of a molecule, and
a CSV of the panel's columns (those of ``molprop predict --model <panel>``). Everything the caller
typed or uploaded is inserted as text (``textContent``), never as HTML; the page's
Content-Security-Policy allows scripts and styles from this origin only, so even a bug there
would not run injected code. Nothing is loaded from outside the machine. Clicking a predicted
row asks ``POST /v1/explain`` for its per-atom picture, shown as an ``<img>`` from a ``blob:``
URL (an SVG in an ``<img>`` runs nothing), never inserted as markup.

Settings (environment, defaults in brackets):

- ``MOLPROP_WEB_JOB_ROWS`` [100]: inputs with more rows become jobs (capped at
  ``MOLPROP_MAX_BATCH``, the most ``/v1/predict`` takes).
- ``MOLPROP_WEB_TABLE_ROWS`` [500]: rows of the results table shown a page (Previous /
  Next; a larger job's pages are fetched with ``GET /v1/jobs/{id}/results?offset=&limit=``,
  the downloaded CSV has all of them).
- ``MOLPROP_WEB_POLL_MS`` [500]: how often the page asks for a job's progress.
- ``MOLPROP_WEB_DRAW_WORKERS`` [1]: threads drawing molecules (a 200-atom cage takes ~0.8 s).
- ``MOLPROP_WEB_DRAW_QUEUE`` [16]: drawings that may wait for them (more: 503).
- ``MOLPROP_WEB_DRAW_CACHE`` [256]: drawings kept (each at most ~200 kB: at most ~50 MB).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from api.panel import panel_summaries
from api.registry import ServedModel
from api.routes import get_panels, get_settings, summary
from api.scheduler import Job, JobStopped, Lane, QueueFull, run_job
from api.settings import ENV_PREFIX, Settings
from molprop.errors import InvalidInputError
from molprop.inference import molecule_svg
from molprop.inference.panel import PHYSCHEM_COLUMNS

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
    draw_workers: int = Field(1, ge=1, description="threads drawing molecules")
    draw_queue: int = Field(16, ge=0, description="drawings waiting for them (more: 503)")
    draw_cache: int = Field(256, ge=0, description="drawings kept in the LRU cache")


def _page_order(model: ServedModel) -> tuple[bool, str]:
    return model.published, model.name


def _threshold(model: ServedModel) -> float | None:
    """The similarity threshold of the model's applicability domain (None without one)."""
    domain = getattr(model.predictor, "domain", None)
    return None if domain is None else float(domain.threshold)


def card_html(markdown: str) -> Markup:
    """A model card (markdown) as HTML; HTML inside the card is shown as text."""
    return Markup(_MARKDOWN.render(markdown))


#: a drawing's cache key: SMILES, max SMILES length, max heavy atoms (every drawing has the
#: library's one size, ``molprop.chem.draw.DRAWING_SIZE``)
DrawingKey = tuple[str, int, int]


class DrawingCache:
    """The last ``size`` drawings (SVG bytes), least recently used dropped first; thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[DrawingKey, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: DrawingKey) -> bytes | None:
        with self._lock:
            svg = self._items.get(key)
            if svg is not None:
                self._items.move_to_end(key)
            return svg

    def put(self, key: DrawingKey, svg: bytes) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._items[key] = svg
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def draw_lane(web: WebSettings) -> Lane:
    """The lane drawings run on (the app's lifespan makes it and shuts it down)."""
    return Lane("draw", web.draw_workers, web.draw_queue)


def web_router(web: WebSettings | None = None) -> APIRouter:
    """The page's routes; ``web`` defaults to the environment."""
    web = web or WebSettings()
    router = APIRouter(tags=["web page"])
    cache = DrawingCache(web.draw_cache)

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> Response:
        models: dict[str, ServedModel] | None = getattr(request.app.state, "models", None)
        # the model directory's models first: the first is the form's default, which a
        # published (fine-tuned) model never becomes while there is another
        served = [] if models is None else sorted(models.values(), key=_page_order)
        # panels named like a model are answered as that model (the API's rule): not listed
        panels = [
            p.model_dump()
            for p in panel_summaries(get_panels(request), models or {})
            if p.name not in (models or {})
        ]
        config = {
            "models": [{**summary(m), "domain_threshold": _threshold(m)} for m in served],
            "panels": panels,
            "physchemColumns": list(PHYSCHEM_COLUMNS),
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
                "panels": panels,
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
            503: {"content": {"text/plain": {}}, "description": "too many drawings waiting"},
            504: {"content": {"text/plain": {}}, "description": "not drawn in time"},
        },
    )
    async def molecule(
        smiles: Annotated[str, Query(min_length=1, description="one SMILES")],
        request: Request,
        settings: Annotated[Settings, Depends(get_settings)],
    ) -> Response:
        """An RDKit 2D drawing of ``smiles`` (SVG); 422 with the reason when it does not parse,
        is longer than ``MOLPROP_MAX_SMILES_LENGTH`` or has more than
        ``MOLPROP_MAX_HEAVY_ATOMS`` heavy atoms; 503 with ``Retry-After`` when the drawing
        lane's queue is full, 504 past ``MOLPROP_REQUEST_TIMEOUT_S``."""
        arrival = time.monotonic()
        headers = {"Content-Security-Policy": SVG_CSP, "X-Content-Type-Options": "nosniff"}
        key = (smiles, settings.max_smiles_length, settings.max_heavy_atoms)
        svg = cache.get(key)
        if svg is None:
            lanes: dict[str, Lane] | None = getattr(request.app.state, "lanes", None)
            if lanes is None:
                return Response("the service is starting", 503, headers, media_type="text/plain")
            lane = lanes["draw"]
            job = Job(deadline=arrival + settings.request_timeout_s)

            def draw() -> bytes:
                text = molecule_svg(smiles, max_length=key[1], max_heavy_atoms=key[2])
                return text.encode("utf-8")

            try:
                svg = await run_job(lane, draw, job, request)
            except InvalidInputError as exc:
                return Response(str(exc), 422, headers, media_type="text/plain")
            except QueueFull as exc:
                headers["Retry-After"] = str(exc.retry_after)
                message = f"too many drawings waiting ({exc}): retry after {exc.retry_after} s"
                return Response(message, 503, headers, media_type="text/plain")
            except JobStopped as exc:
                message = f"the drawing was stopped ({exc.reason}; MOLPROP_REQUEST_TIMEOUT_S)"
                return Response(message, 504, headers, media_type="text/plain")
            cache.put(key, svg)
        headers["Cache-Control"] = "max-age=86400"
        return Response(svg, headers=headers, media_type="image/svg+xml")

    return router
