"""The web page at ``/`` in a real headless Chromium against a real uvicorn process: pasted
SMILES through ``/v1/predict`` (statuses and values equal to the Python predictor's, sorting,
user text shown as text), and a 2,000-row CSV upload that becomes a job with a progress bar
and downloads with every row, in order, ids intact."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from molprop.inference import Predictor
from tests.api.conftest import DATA
from tests.browser.conftest import JOB_CHUNK_ROWS

PASTE = ["CCO", "C1CC", "c1ccccc1O"]
XSS = ["<script>window.__xss = 1</script>", '<img src="x" onerror="window.__xss = 2">']
JOB_ROWS = 2000
BAD_ROWS = {500: "not a smiles", 1500: "C1CC"}


def _wait(driver, condition, timeout: float = 60.0, what: str = "condition"):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: condition(d), message=f"timed out waiting for {what}"
    )


def _download(driver, download_dir: Path, button: str = "download") -> Path:
    """Click the button ``button`` (an element id) and wait for the CSV it saves into
    ``download_dir``; its path."""
    from selenium.webdriver.common.by import By

    before = set(download_dir.iterdir())
    driver.find_element(By.ID, button).click()
    new = _wait(
        driver,
        lambda d: [p for p in set(download_dir.iterdir()) - before if p.suffix == ".csv"],
        30,
        "the download",
    )
    time.sleep(0.2)  # the browser renames the finished file
    return new[0]


def _open(driver, base: str, model: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver.get(f"{base}/")
    _wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    Select(driver.find_element(By.ID, "model")).select_by_value(model)


def _rows(driver) -> list[dict]:
    """The results table as the page shows it (text of each cell, plus data attributes)."""
    return driver.execute_script(
        """
        return [...document.querySelectorAll('#results-table tbody tr')].map(tr => ({
          index: Number(tr.dataset.index),
          status: tr.querySelector('td.status').textContent,
          smiles: tr.querySelector('td.smiles').textContent,
          id: tr.querySelector('td.id').textContent,
          value: tr.querySelector('td.value').dataset.value ?? null,
          error: tr.querySelector('td.error').textContent,
          images: [...tr.querySelectorAll('img')].map(i => i.getAttribute('src')),
          drawn: [...tr.querySelectorAll('img')].every(i => i.complete && i.naturalWidth > 0),
        }));
        """
    )


def _submit(driver) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "predict").click()
    _wait(
        driver,
        lambda d: (
            d.find_element(By.ID, "predict").is_enabled()
            and d.find_element(By.ID, "message").text not in ("", "Working…")
        ),
        what="the prediction",
    )


def _paste(driver, lines: list[str]) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "smiles")
    box.clear()
    # set the value directly: send_keys would type an "<img ...>" line fine, but slowly
    driver.execute_script("arguments[0].value = arguments[1];", box, "\n".join(lines))


def test_pasted_smiles_give_one_row_each_with_the_predictors_values(
    browser, web_server: str, model_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, web_server, "solubility")
    _paste(browser, PASTE)
    _submit(browser)
    rows = _rows(browser)
    assert [r["smiles"] for r in rows] == PASTE
    assert [r["status"] for r in rows] == ["ok", "invalid_input", "ok"]
    assert [r["id"] for r in rows] == ["1", "2", "3"]  # the line numbers
    assert "could not parse" in rows[1]["error"] and rows[1]["value"] is None
    expected = Predictor.from_pretrained(model_dir / "solubility").predict(PASTE)
    for row, want in zip(rows, expected["logp"]):
        if row["status"] == "ok":
            assert float(row["value"]) == pytest.approx(float(want), rel=1e-6, abs=1e-9)
    # valid rows are drawn by the service (RDKit SVG), the invalid one is not
    _wait(browser, lambda d: all(r["drawn"] for r in _rows(d)), 30, "the drawings")
    assert [len(r["images"]) for r in rows] == [1, 0, 1]
    assert "1 of 3 rows could not be predicted" in browser.find_element(By.ID, "message").text
    # the interval's explanation says how its intervals covered the model's test molecules
    from molprop.artifact.coverage import measured_coverage

    metrics = json.loads((model_dir / "solubility" / "metrics.json").read_text())
    level = float(browser.find_element(By.ID, "interval").get_attribute("value"))
    measured = {c.level: c for c in measured_coverage(metrics).get("logp", ())}[level]
    help_text = browser.find_element(By.ID, "help-interval").get_attribute("textContent")
    assert f"On the model's {measured.n} test molecules" in help_text
    assert f"contained {round(measured.coverage * 100, 1):g} %" in help_text
    # the selected model's card is the one shown
    cards = browser.find_elements(By.CSS_SELECTOR, "article.card")
    shown = [c.get_attribute("data-model") for c in cards if c.is_displayed()]
    assert shown == ["solubility"]


def test_the_page_loads_nothing_from_outside_and_logs_no_error(browser, web_server: str) -> None:
    browser.get_log("performance")  # drop what earlier tests left
    browser.get_log("browser")
    _open(browser, web_server, "solubility")
    _paste(browser, PASTE)
    _submit(browser)
    _wait(browser, lambda d: all(r["drawn"] for r in _rows(d)), 30, "the drawings")
    urls = []
    for entry in browser.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            urls.append(event["params"]["request"]["url"])
    assert any(u.endswith("/v1/predict") for u in urls) and any("/static/web.js" in u for u in urls)
    outside = [u for u in urls if not u.startswith(f"{web_server}/")]
    assert outside == []
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_sorting_by_value_puts_failed_rows_last_both_ways(browser, web_server: str) -> None:
    from selenium.webdriver.common.by import By

    smiles = ["CCCCCCCC", "C1CC", "OCC(O)CO", "c1ccccc1", "CC(=O)O", "ClC(Cl)Cl"]
    _open(browser, web_server, "solubility")
    _paste(browser, smiles)
    _submit(browser)
    header = browser.find_element(By.CSS_SELECTOR, "th[data-key='value']")
    values = {r["index"]: float(r["value"]) for r in _rows(browser) if r["value"] is not None}
    assert len(values) == 5
    ascending = sorted(values, key=values.get)
    header.find_element(By.TAG_NAME, "button").click()
    assert [r["index"] for r in _rows(browser)] == [*ascending, 1]
    assert header.get_attribute("aria-sort") == "ascending"
    header.find_element(By.TAG_NAME, "button").click()
    assert [r["index"] for r in _rows(browser)] == [*ascending[::-1], 1]
    assert header.get_attribute("aria-sort") == "descending"
    browser.find_element(By.CSS_SELECTOR, "th[data-key='index'] button").click()
    assert [r["index"] for r in _rows(browser)] == list(range(6))


def test_user_text_is_shown_as_text_never_run(browser, web_server: str) -> None:
    _open(browser, web_server, "solubility")
    _paste(browser, [*XSS, "CCO"])
    _submit(browser)
    rows = _rows(browser)
    assert [r["smiles"] for r in rows] == [*XSS, "CCO"]
    assert [r["status"] for r in rows] == ["invalid_input", "invalid_input", "ok"]
    assert browser.execute_script("return window.__xss === undefined")
    assert (
        browser.execute_script(
            "return document.querySelectorAll('#results-table script, img[src=\"x\"]').length"
        )
        == 0
    )


def test_a_csv_without_the_smiles_column_or_a_spreadsheet_says_so_and_the_page_keeps_working(
    browser, web_server: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    bad = tmp_path / "no_smiles.csv"
    bad.write_text("name,structure\na,CCO\n")
    _open(browser, web_server, "solubility")
    browser.find_element(By.ID, "csv-file").send_keys(str(bad))
    _submit(browser)
    text = browser.find_element(By.ID, "message").text
    assert 'no column "smiles"' in text and "name, structure" in text
    # a workbook saved from Excel (a zip archive), even named .csv: say how to save it as CSV
    import zipfile

    sheet = tmp_path / "assay.csv"
    with zipfile.ZipFile(sheet, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    browser.find_element(By.ID, "clear-file").click()
    browser.find_element(By.ID, "csv-file").send_keys(str(sheet))
    _submit(browser)
    text = browser.find_element(By.ID, "message").text
    assert "assay.csv is a spreadsheet" in text and "CSV UTF-8" in text
    # a small CSV with an id column goes through /v1/predict, ids kept
    good = tmp_path / "small.csv"
    good.write_text('code,smiles\nA-1,CCO\n"B,2",C1CC\nC-3,c1ccccc1O\n')
    browser.find_element(By.ID, "clear-file").click()
    browser.find_element(By.ID, "csv-file").send_keys(str(good))
    browser.find_element(By.ID, "id-column").send_keys("code")
    _submit(browser)
    rows = _rows(browser)
    assert [r["id"] for r in rows] == ["A-1", "B,2", "C-3"]
    assert [r["status"] for r in rows] == ["ok", "invalid_input", "ok"]
    assert browser.find_element(By.ID, "job").get_attribute("hidden") is not None


def _job_input(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(DATA / "Lipophilicity.csv.gz", dtype=str, keep_default_na=False)
    frame = frame.head(JOB_ROWS)[["CMPD_CHEMBLID", "smiles"]].rename(
        columns={"CMPD_CHEMBLID": "compound"}
    )
    for i, smi in BAD_ROWS.items():
        frame.loc[i, "smiles"] = smi
    frame.to_csv(path, index=False)
    return frame


def _unsupported_rows(model: Path, smiles: list[str], skip: dict[int, str]) -> list[int]:
    """Rows the served model's chemistry checks refuse (elements it never saw, salts)."""
    from molprop.errors import UnsupportedMoleculeError

    screened = Predictor.from_pretrained(model).screened
    rows = []
    for i, smi in enumerate(smiles):
        if i in skip:
            continue
        try:
            screened.from_smiles(smi)
        except UnsupportedMoleculeError:
            rows.append(i)
    return rows


def test_a_large_upload_becomes_a_job_with_progress_and_downloads_every_row(
    browser, web_server: str, model_dir: Path, tmp_path: Path, download_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    frame = _job_input(tmp_path / "lipo_2000.csv")
    unsupported = _unsupported_rows(
        model_dir / "solubility", frame["smiles"].tolist(), skip=BAD_ROWS
    )
    _open(browser, web_server, "solubility")
    browser.get_log("performance")  # drop what earlier tests left
    browser.find_element(By.ID, "csv-file").send_keys(str(tmp_path / "lipo_2000.csv"))
    browser.find_element(By.ID, "id-column").send_keys("compound")
    browser.find_element(By.ID, "predict").click()
    _wait(browser, lambda d: d.find_element(By.ID, "job").is_displayed(), 30, "the job panel")
    _wait(
        browser,
        lambda d: d.find_element(By.ID, "predict").is_enabled(),
        240,
        "the job to finish",
    )
    message = browser.find_element(By.ID, "message").text
    assert f"done: {JOB_ROWS} rows" in message, message
    progress = browser.find_element(By.ID, "job-progress")
    assert progress.get_attribute("max") == str(JOB_ROWS)
    assert progress.get_attribute("value") == str(JOB_ROWS)
    seen = [int(v) for v in progress.get_attribute("data-seen").split(",")]
    assert seen == sorted(seen) and seen[0] == 0 and seen[-1] == JOB_ROWS
    # progress is recorded per chunk of JOB_CHUNK_ROWS rows
    assert all(v % JOB_CHUNK_ROWS == 0 or v == JOB_ROWS for v in seen), seen
    assert browser.find_element(By.ID, "job-text").text == f"{JOB_ROWS} / {JOB_ROWS} rows (done)"
    # the table shows the job's results a page of MOLPROP_WEB_TABLE_ROWS (500) at a time
    ids = frame["compound"].tolist()
    assert [r["id"] for r in _rows(browser)] == ids[:500]
    pager = browser.find_element(By.ID, "pager")
    assert pager.is_displayed() and browser.find_element(By.ID, "page-text").text == (
        f"rows 1–500 of {JOB_ROWS}"
    )
    assert not browser.find_element(By.ID, "page-prev").is_enabled()

    def turn(button: str, first: int) -> None:  # a page is fetched: wait for it
        browser.find_element(By.ID, button).click()
        want = f"rows {first + 1}–{min(first + 500, JOB_ROWS)} of {JOB_ROWS}"
        _wait(browser, lambda d: d.find_element(By.ID, "page-text").text == want, 30, want)

    for first in (500, 1000, 1500):
        turn("page-next", first)
    assert [r["id"] for r in _rows(browser)] == ids[1500:]
    assert _rows(browser)[0]["status"] == "invalid_input"  # row 1500: "C1CC"
    assert not browser.find_element(By.ID, "page-next").is_enabled()
    turn("page-prev", 1000)
    assert [r["id"] for r in _rows(browser)] == ids[1000:1500]
    assert [r["index"] for r in _rows(browser)] == list(range(1000, 1500))
    # each page is fetched from the service, a page at a time
    pages = []
    for entry in browser.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            url = event["params"]["request"]["url"]
            if "/results?" in url:
                pages.append(url.split("?", 1)[1])
    assert pages == [f"offset={o}&limit=500" for o in (0, 500, 1000, 1500, 1000)]

    out = pd.read_csv(_download(browser, download_dir), dtype=str, keep_default_na=False)
    assert len(out) == JOB_ROWS
    assert out.columns[:2].tolist() == ["compound", "smiles"]  # the upload's own columns first
    assert out["compound"].tolist() == frame["compound"].tolist()
    assert out["smiles"].tolist() == frame["smiles"].tolist()
    failed = out.index[out["status"] != "ok"].tolist()
    assert failed == sorted([*BAD_ROWS, *unsupported])
    assert (out.loc[sorted(BAD_ROWS), "status"] == "invalid_input").all()
    assert (out.loc[unsupported, "status"] == "unsupported").all()


def test_a_long_paste_becomes_a_json_job_with_line_numbers_as_ids(browser, web_server: str) -> None:
    from selenium.webdriver.common.by import By

    frame = pd.read_csv(DATA / "delaney_chemprop.csv.gz", dtype=str).head(30)
    lines = frame["smiles"].tolist()
    lines[7] = "not a smiles"
    lines.insert(12, "")  # a blank line: skipped, the ids stay the line numbers
    _open(browser, web_server, "solubility")
    _paste(browser, lines)  # 30 SMILES > the fixture's MOLPROP_WEB_JOB_ROWS=20
    browser.find_element(By.ID, "predict").click()
    _wait(browser, lambda d: d.find_element(By.ID, "job").is_displayed(), 30, "the job panel")
    _wait(browser, lambda d: "done:" in d.find_element(By.ID, "message").text, 120, "the job")
    rows = _rows(browser)
    want_ids = [str(i + 1) for i, line in enumerate(lines) if line]
    assert [r["id"] for r in rows] == want_ids
    assert [r["smiles"] for r in rows] == [line for line in lines if line]
    assert [r["index"] for r in rows if r["status"] != "ok"] == [7]
    assert "1 blank line(s) skipped" in browser.find_element(By.ID, "results-summary").text
