"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) load nothing from outside: every script, style
and icon they reference is a local URL that the service serves with the right content type."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.docs import DOCS_FILES, DOCS_STATIC
from api.main import create_app
from api.settings import Settings

_REFERENCE = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|url:\s*["']([^"']+)["']""")
TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The service without models: the documentation pages need none."""
    root = tmp_path_factory.mktemp("docs")
    settings = Settings(model_dir=root / "models", data_dir=root / "data", job_workers=0)
    with TestClient(create_app(settings)) as c:
        yield c


def references(html: str) -> list[str]:
    return [a or b for a, b in _REFERENCE.findall(html)]


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        ("/docs", {"/static/docs/swagger-ui-bundle.js", "/static/docs/swagger-ui.css"}),
        ("/redoc", {"/static/docs/redoc.standalone.js"}),
    ],
)
def test_docs_pages_reference_only_local_files_that_are_served(
    client: TestClient, page: str, assets: set[str]
) -> None:
    r = client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    urls = references(r.text)
    assert assets <= set(urls), urls
    assert "/openapi.json" in urls
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url  # this origin only
    assert "http://" not in r.text and "https://" not in r.text  # no CDN, no Google Fonts
    for url in urls:
        got = client.get(url)
        assert got.status_code == 200, url
        suffix = url[url.rfind(".") :]
        if suffix in TYPES:
            assert got.headers["content-type"].startswith(TYPES[suffix]), url
    swagger = client.get("/static/docs/swagger-ui-bundle.js")
    assert len(swagger.content) > 1_000_000 and b"SwaggerUIBundle" in swagger.content


def test_only_the_shipped_docs_files_are_served(client: TestClient) -> None:
    assert {p.name for p in DOCS_STATIC.iterdir()} == set(DOCS_FILES)
    for name in ("LICENSE-swagger-ui.txt", "LICENSE-redoc.txt"):
        r = client.get(f"/static/docs/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "Apache License" in client.get("/static/docs/LICENSE-swagger-ui.txt").text
    assert "MIT License" in client.get("/static/docs/LICENSE-redoc.txt").text
    for bad in ("../docs.py", "..%2Fdocs.py", "nothing.js", "%2e%2e%2fmain.py"):
        assert client.get(f"/static/docs/{bad}").status_code == 404, bad
