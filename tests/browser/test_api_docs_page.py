"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) render the service's operations in a real
headless Chromium with every request to the service itself: they work offline."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.api.conftest import REPO, uvicorn_server
from tests.browser.conftest import require_browser
from tests.browser.test_web_page import _wait


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn process serving the shipped models (nothing to train), no job worker."""
    require_browser()
    root = tmp_path_factory.mktemp("docs")
    with uvicorn_server(REPO / "pretrained", root / "server.log", job_workers="0") as base:
        yield base


def _requests(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            urls.append(event["params"]["request"]["url"])
    return urls


def test_docs_pages_render_the_operations_from_local_files(browser, docs_server: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get_log("performance")  # drop what earlier tests left
    browser.get_log("browser")
    browser.get(f"{docs_server}/docs")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock"), 60, "Swagger UI")
    paths = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")]
    assert "/v1/predict" in paths and "/v1/jobs" in paths, paths

    browser.get(f"{docs_server}/redoc")
    _wait(
        browser,
        lambda d: "/v1/predict" in d.find_element(By.TAG_NAME, "body").text,
        60,
        "ReDoc",
    )
    urls = _requests(browser)
    assert any(u.endswith("/static/docs/swagger-ui-bundle.js") for u in urls)
    assert any(u.endswith("/static/docs/redoc.standalone.js") for u in urls)
    outside = [u for u in urls if not u.startswith((f"{docs_server}/", "data:", "blob:", "about:"))]
    assert outside == [], outside
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
