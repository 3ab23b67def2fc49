"""The interactive API documentation, served from this machine: ``GET /docs`` (Swagger UI) and
``GET /redoc`` (ReDoc), with their scripts and styles under ``/static/docs/``.

FastAPI's own pages load Swagger UI and ReDoc from a CDN (and ReDoc's fonts from Google), so
they are blank offline. These pages are FastAPI's (``get_swagger_ui_html`` /
``get_redoc_html``) pointed at copies shipped in ``api/static/docs/``: swagger-ui-dist 5.35.0
(Apache-2.0, ``LICENSE-swagger-ui.txt``, ``NOTICE-swagger-ui.txt``) and ReDoc 2.5.4 (MIT,
``LICENSE-redoc.txt``), as published on npm, their source-map comments removed and, in ReDoc,
the address of the Redocly logo in its footer emptied (the image hides itself when it does not
load); the licences of the libraries bundled inside them are in the ``*.js.LICENSE.txt`` files
next to them. Swagger UI's online validator badge is off, so neither page contacts another host
(``tests/browser/test_api_docs_page.py`` checks every request a real browser makes).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

DOCS_STATIC = Path(__file__).resolve().parent / "static" / "docs"
PREFIX = "/static/docs"
#: the only files ``/static/docs/`` serves (no path from the request reaches the file system)
DOCS_FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "LICENSE-swagger-ui.txt": "text/plain; charset=utf-8",
    "NOTICE-swagger-ui.txt": "text/plain; charset=utf-8",
    "swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
    "LICENSE-redoc.txt": "text/plain; charset=utf-8",
    "redoc.standalone.js.LICENSE.txt": "text/plain; charset=utf-8",
}
FAVICON = "/static/favicon.svg"


def docs_router(title: str, openapi_url: str = "/openapi.json") -> APIRouter:
    """``/docs``, ``/redoc`` and their files, for the app titled ``title``."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs", response_class=HTMLResponse)
    def swagger_ui(request: Request) -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=request.scope.get("root_path", "") + openapi_url,
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=FAVICON,
            swagger_ui_parameters={"validatorUrl": None},
        )

    @router.get("/redoc", response_class=HTMLResponse)
    def redoc(request: Request) -> HTMLResponse:
        return get_redoc_html(
            openapi_url=request.scope.get("root_path", "") + openapi_url,
            title=f"{title} - ReDoc",
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=FAVICON,
            with_google_fonts=False,
        )

    @router.get(PREFIX + "/{name}")
    def asset(name: str) -> Response:
        if name not in DOCS_FILES:
            return Response("not found", status_code=404, media_type="text/plain")
        headers = {"Cache-Control": "max-age=86400"}
        return FileResponse(DOCS_STATIC / name, media_type=DOCS_FILES[name], headers=headers)

    return router


__all__ = ["DOCS_FILES", "docs_router"]
