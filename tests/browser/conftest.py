"""A real browser for the web page tests: headless Chromium from Debian's ``chromium`` and
``chromium-driver`` packages (``scripts/install-system-deps.sh`` installs them), driven by
Selenium through ``/usr/bin/chromedriver`` (nothing is downloaded), against a real uvicorn
process on 127.0.0.1 serving the tiny test models of ``tests/api/conftest.py``.

Without the browser these tests are skipped with the reason, except in CI (``CI=true``),
where they fail: CI installs the browser, so its absence there is a bug.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import model_dir, uvicorn_server  # noqa: F401  (shared fixtures)

CHROMIUM = Path(os.environ.get("MOLPROP_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("MOLPROP_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"))
#: rows a job worker predicts and commits at a time (the progress bar moves per chunk)
JOB_CHUNK_ROWS = 250
#: as root in a container: no sandbox; no network of its own (updates, sync, QUIC)
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def missing_browser() -> str | None:
    """Why the browser cannot run here, or None."""
    if importlib.util.find_spec("selenium") is None:
        return "the Python package selenium is not installed (pip install -e '.[dev]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return (
                f"{path} not found: install Debian's {package} "
                "(sudo scripts/install-system-deps.sh)"
            )
    return None


def require_browser() -> None:
    """Skip (fail in CI) when there is no browser."""
    reason = missing_browser()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the browser tests: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def download_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="session")
def browser(download_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium (fresh profile) for the session; downloads go to ``download_dir``."""
    require_browser()
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), download_dir)
    try:
        yield driver
    finally:
        driver.quit()


def start_chromium(profile: Path, download_dir: Path, window: tuple[int, int] = (1400, 1000)):
    """A headless Chromium under Selenium with its profile in the (empty) folder ``profile``;
    downloads go to ``download_dir`` (also used by ``scripts/web_screenshot.py``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    size = f"--window-size={window[0]},{window[1]}"
    for flag in [*CHROMIUM_FLAGS, size, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(download_dir),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        },
    )
    # every request the page makes and its console messages, for the tests to read
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    return driver


@pytest.fixture(scope="session")
def web_server(
    model_dir: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """A real uvicorn process with the tiny models, jobs stored under a fresh data directory;
    inputs over 20 rows become jobs, predicted ``JOB_CHUNK_ROWS`` rows at a time."""
    require_browser()
    root = tmp_path_factory.mktemp("web")
    with uvicorn_server(
        model_dir,
        root / "server.log",
        data_dir=str(root / "data"),
        job_chunk_rows=str(JOB_CHUNK_ROWS),
        web_job_rows="20",
        web_poll_ms="100",
    ) as base:
        yield base
