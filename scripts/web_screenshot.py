"""Screenshot of the web page with results, for the README: ``docs/images/web.png``.

    .venv/bin/python scripts/web_screenshot.py [--out docs/images/web.png]

Starts a real uvicorn process serving the shipped models (jobs in a temporary data
directory), opens ``/`` in headless Chromium (Debian's ``chromium`` + ``chromium-driver``),
pastes a few SMILES (one invalid), predicts with ``solubility``, waits for the drawings and
saves the page.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.api.conftest import uvicorn_server  # noqa: E402
from tests.browser.conftest import missing_browser, start_chromium  # noqa: E402

SMILES = [
    "CC(=O)Oc1ccccc1C(=O)O",
    "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
    "c1ccccc1O",
    "CCCCCCCC",
    "C1CC",
    "OCC(O)CO",
    "Clc1ccc(Cl)cc1",
]
log = logging.getLogger("web_screenshot")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "web.png")
    parser.add_argument("--model", default="solubility")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    reason = missing_browser()
    if reason:
        raise SystemExit(f"no browser: {reason}")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with tempfile.TemporaryDirectory(prefix="molprop-shot-") as tmp:
        root = Path(tmp)
        log.info("starting the service with the shipped models")
        with uvicorn_server(REPO / "pretrained", root / "server.log", data_dir=str(root)) as base:
            driver = start_chromium(root / "profile", root, window=(1400, 1700))
            try:
                driver.get(f"{base}/")
                wait = WebDriverWait(driver, 60, poll_frequency=0.1)
                wait.until(
                    lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
                )
                Select(driver.find_element(By.ID, "model")).select_by_value(args.model)
                box = driver.find_element(By.ID, "smiles")
                driver.execute_script("arguments[0].value = arguments[1];", box, "\n".join(SMILES))
                driver.find_element(By.ID, "predict").click()
                wait.until(lambda d: d.find_element(By.ID, "results").is_displayed())
                wait.until(
                    lambda d: d.execute_script(
                        "return [...document.querySelectorAll('#results-table img')]"
                        ".every(i => i.complete && i.naturalWidth > 0)"
                    )
                )
                args.out.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(args.out))
            finally:
                driver.quit()
    log.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
