"""FastAPI application: ``create_app()`` and the module-level ``app`` that uvicorn serves.

    uvicorn api.main:app --host 127.0.0.1 --port 8000     # serves the shipped models
    MOLPROP_MODEL_DIR=runs uvicorn api.main:app ...        # serves runs/<name>/ instead

Models are loaded once, in the lifespan, before the server accepts requests; inference runs in
worker threads (:mod:`api.scheduler`) so the event loop never blocks on a model. Invalid
settings (e.g. ``MOLPROP_API_KEY`` set but empty) stop the process at start-up with the reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from api.docs import docs_router
from api.embed import embed_router
from api.errors import validation_error
from api.explain import explain_router
from api.jobs import UPLOAD, jobs_router
from api.limits import BodySizeLimit
from api.physchem import physchem_router
from api.registry import ServedModel, add_job_models, load_models
from api.routes import health_router, v1
from api.scheduler import Lane
from api.settings import Settings
from api.web import WebSettings, draw_lane, web_router
from api.workers import WorkerSupervisor
from molprop.artifact.panel import read_panels
from molprop.artifact.published import PublishedModels
from molprop.jobstore import make_engine, migrate

log = logging.getLogger(__name__)

#: seconds between looks for models that fine-tune jobs made
MODEL_REFRESH_S = 2.0


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. ``settings`` default to the environment (``MOLPROP_*``)."""
    settings = settings or Settings()
    web = WebSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.lanes = {
            "small": Lane("small", 1, settings.max_queue),
            "large": Lane("large", settings.inference_workers, settings.max_queue),
            "draw": draw_lane(web),
        }
        engine = make_engine(settings.job_database_url)
        migrate(engine)
        app.state.engine = engine
        models = load_models(settings.model_dir)
        app.state.panels = read_panels(settings.model_dir)
        app.state.refresh_models = model_refresher(models, engine, settings)
        app.state.refresh_models()
        app.state.models = models
        if not app.state.models:
            log.error("no model loaded from %s", settings.model_dir)
        workers = WorkerSupervisor(settings)
        workers.start()
        app.state.workers = workers
        try:
            yield
        finally:
            workers.stop()
            for lane in app.state.lanes.values():
                lane.shutdown()
            app.state.models = None
            app.state.refresh_models = None
            engine.dispose()

    title = "molprop prediction service"
    app = FastAPI(
        title=title,
        version="1",
        description="Molecular properties with uncertainty from ESA/NSA ensembles. "
        "See GET /v1/models for the served models and their test metrics.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's pages load from a CDN; api.docs serves local copies
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.models = None
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        path_limits={"/v1/jobs": (settings.max_job_body_bytes, "MOLPROP_MAX_JOB_BODY_BYTES")},
        json_limits={
            "/v1/jobs": (settings.max_job_json_bytes, "MOLPROP_MAX_JOB_JSON_BYTES", UPLOAD)
        },
    )
    app.include_router(health_router)
    app.include_router(v1)
    app.include_router(explain_router)
    app.include_router(embed_router)
    app.include_router(physchem_router)
    app.include_router(jobs_router)
    app.include_router(web_router(web))
    app.include_router(docs_router(title))
    # FastAPI's decorator, called: it adds the handler as add_exception_handler does, and its
    # type takes a handler of the one exception class (Starlette's wants any Exception)
    app.exception_handler(RequestValidationError)(validation_error)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}"}, status_code=500)

    return app


def model_refresher(
    models: dict[str, ServedModel], engine, settings: Settings
) -> Callable[[], None]:
    """A callable that adds the models fine-tune jobs stored (:func:`api.registry.add_job_models`)
    to ``models``, looking at most every ``MODEL_REFRESH_S`` seconds; a failed look is logged
    and retried later (serving goes on)."""
    lock = threading.Lock()
    published = PublishedModels.in_data_dir(engine, settings.data_dir)
    broken: set[str] = set()
    last = [float("-inf")]

    def refresh() -> None:
        now = time.monotonic()
        if now - last[0] < MODEL_REFRESH_S or not lock.acquire(blocking=False):
            return
        try:
            last[0] = now
            add_job_models(models, published, broken)
        except Exception:
            log.exception("could not look for fine-tuned models in the job database")
        finally:
            lock.release()

    return refresh


def create_app_from_environment() -> FastAPI:
    """``create_app()`` with the ``MOLPROP_*`` environment; invalid settings end the process
    (exit status 1) with the reason, never the values (the API key is a secret)."""
    try:
        settings = Settings()
    except ValidationError as exc:
        reasons = "\n".join(
            f"  {'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
            for e in exc.errors(include_input=False)
        )
        raise SystemExit(f"molprop service not started: invalid settings\n{reasons}") from None
    return create_app(settings)


app = create_app_from_environment()
