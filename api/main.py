"""FastAPI application: ``create_app()`` and the module-level ``app`` that uvicorn serves.

    MOLPROP_MODEL_DIR=pretrained uvicorn api.main:app --host 127.0.0.1 --port 8000

Models are loaded once, in the lifespan, before the server accepts requests; inference runs in
a thread pool so the event loop never blocks on a model.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from api.limits import BodySizeLimit
from api.registry import load_models
from api.routes import health_router, v1
from api.settings import Settings

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. ``settings`` default to the environment (``MOLPROP_*``)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.executor = ThreadPoolExecutor(settings.inference_workers,
                                                thread_name_prefix="molprop-inference")  # fmt: skip
        app.state.models = load_models(settings.model_dir)
        if not app.state.models:
            log.error("no model loaded from %s", settings.model_dir)
        try:
            yield
        finally:
            app.state.executor.shutdown(wait=True)
            app.state.models = None

    app = FastAPI(
        title="molprop prediction service",
        version="1",
        description="Molecular properties with uncertainty from ESA ensembles. "
        "See GET /v1/models for the served models and their test metrics.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.models = None
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.include_router(health_router)
    app.include_router(v1)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}"}, status_code=500)

    return app


app = create_app()
