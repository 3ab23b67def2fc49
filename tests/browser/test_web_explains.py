"""The web page explains its results, in a real headless Chromium against a real uvicorn
process: the interval's level in its header, tooltips (and accessible descriptions) for std,
interval and domain, the similarity next to in-domain, the SMILES column of an upload found
whatever its case, and a row's per-atom explanation picture on click."""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from molprop.inference import Predictor
from tests.api.conftest import DATA
from tests.browser.test_web_page import _open, _paste, _rows, _submit, _wait

SMILES = ["CCO", "C1CC", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1"]


def _header(driver, key: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f"th[data-key='{key}'] button")


def _description(driver, button) -> str:
    """The text of the elements the button's aria-describedby names."""
    ids = (button.get_dom_attribute("aria-describedby") or "").split()
    return " ".join(
        driver.execute_script(f"return document.getElementById('{i}').textContent") for i in ids
    )


def _choose_interval(driver, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, "interval")).select_by_value(value)


def test_the_interval_header_names_the_level_asked_for_and_the_headers_explain_themselves(
    browser, web_server: str, model_dir: Path
) -> None:
    threshold = Predictor.from_pretrained(model_dir / "solubility").domain.threshold
    _open(browser, web_server, "solubility")
    _choose_interval(browser, "0.8")
    _paste(browser, SMILES)
    _submit(browser)
    interval = _header(browser, "low")
    assert interval.text == "Interval (80 %)"
    assert "80 %" in interval.get_attribute("title") and "conformal" in interval.get_attribute(
        "title"
    )
    assert _description(browser, interval) == interval.get_attribute("title")
    std = _header(browser, "uncertainty")
    assert "ensemble" in std.get_attribute("title") and "2 members" in std.get_attribute("title")
    assert _description(browser, std) == std.get_attribute("title")
    domain = _header(browser, "in_domain")
    assert f"{threshold:.2f}" in domain.get_attribute("title")
    assert "nearest training molecule" in domain.get_attribute("title")
    assert _description(browser, domain) == domain.get_attribute("title")
    # 95 %, then none: the header follows the level of each run
    _choose_interval(browser, "0.95")
    _submit(browser)
    assert _header(browser, "low").text == "Interval (95 %)"
    _choose_interval(browser, "none")
    _submit(browser)
    assert _header(browser, "low").text == "Interval (none)"
    assert "No interval" in _header(browser, "low").get_attribute("title")
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#results-table td.interval')].map(td => td.textContent)"
    )
    assert cells == ["", "", "", ""]
    # a classifier has no interval even when one is asked for
    _open(browser, web_server, "bbb")
    _choose_interval(browser, "0.9")
    _paste(browser, SMILES)
    _submit(browser)
    assert _header(browser, "low").text == "Interval (none)"


def test_the_in_domain_cell_shows_the_similarity_the_api_and_predictor_give(
    browser, web_server: str, model_dir: Path
) -> None:
    want = Predictor.from_pretrained(model_dir / "solubility").predict(SMILES)
    assert list(want.columns).index("similarity") == list(want.columns).index("in_domain") + 1
    ok = (want["status"] == "ok").tolist()
    assert ok == [True, False, True, True]
    assert math.isnan(want["similarity"][1])  # no prediction, no similarity
    # the API's similarity is the predictor's
    request = urllib.request.Request(
        f"{web_server}/v1/predict",
        data=json.dumps({"model": "solubility", "smiles": SMILES}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        results = json.load(response)["results"]
    for r, s, good in zip(results, want["similarity"], ok):
        assert (r["similarity"] is None) == (not good)
        if good:
            assert 0.0 <= r["similarity"] <= 1.0 and r["similarity"] == pytest.approx(s, abs=1e-9)
    # the page shows it next to yes / no
    _open(browser, web_server, "solubility")
    _paste(browser, SMILES)
    _submit(browser)
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#results-table td.domain')].map(td => td.textContent)"
    )
    expected = [
        f"{'yes' if d else 'no'} ({s:.2f})" if good else ""
        for d, s, good in zip(want["in_domain"], want["similarity"], ok)
    ]
    assert cells == expected


def _upload(driver, path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "clear-file").click()
    driver.find_element(By.ID, "csv-file").send_keys(str(path))
    _submit(driver)


def test_the_smiles_column_is_found_whatever_its_case(
    browser, web_server: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, web_server, "solubility")
    upper = tmp_path / "upper.csv"
    upper.write_text("Name,SMILES\na,CCO\nb,C1CC\nc,c1ccccc1O\n")
    _upload(browser, upper)
    rows = _rows(browser)
    assert [r["smiles"] for r in rows] == ["CCO", "C1CC", "c1ccccc1O"]
    assert [r["status"] for r in rows] == ["ok", "invalid_input", "ok"]
    # an exact match wins over one differing in case
    both = tmp_path / "both.csv"
    both.write_text("SMILES,smiles\nC1CC,CCO\nC1CC,c1ccccc1O\n")
    _upload(browser, both)
    assert [r["smiles"] for r in _rows(browser)] == ["CCO", "c1ccccc1O"]
    # two columns matching apart from case, none exactly: the page says so and sends nothing
    ambiguous = tmp_path / "ambiguous.csv"
    ambiguous.write_text("SMILES,Smiles\nCCO,CCO\n")
    _upload(browser, ambiguous)
    text = browser.find_element(By.ID, "message").text
    assert 'several columns match "smiles"' in text and '"SMILES", "Smiles"' in text
    # an upload large enough to become a job names the file's own column to the service
    frame = pd.read_csv(DATA / "delaney_chemprop.csv.gz", dtype=str).head(30)
    job = tmp_path / "job.csv"
    frame[["smiles"]].rename(columns={"smiles": "Smiles"}).to_csv(job, index=False)
    browser.find_element(By.ID, "clear-file").click()
    browser.find_element(By.ID, "csv-file").send_keys(str(job))
    browser.find_element(By.ID, "predict").click()
    _wait(browser, lambda d: "done:" in d.find_element(By.ID, "message").text, 120, "the job")
    assert [r["smiles"] for r in _rows(browser)] == frame["smiles"].tolist()


def test_clicking_a_predicted_row_shows_its_per_atom_explanation_as_a_picture(
    browser, web_server: str
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, web_server, "solubility")
    _paste(browser, SMILES)
    _submit(browser)
    assert browser.find_element(By.ID, "explanation").is_displayed() is False
    # a failed row has nothing to explain: clicking it asks nothing
    browser.find_element(
        By.CSS_SELECTOR, "#results-table tbody tr[data-index='1'] td.status"
    ).click()
    assert browser.find_element(By.ID, "explanation").is_displayed() is False
    browser.get_log("performance")
    browser.find_element(
        By.CSS_SELECTOR, "#results-table tbody tr[data-index='3'] td.smiles"
    ).click()
    picture = browser.find_element(By.ID, "explanation-picture")
    _wait(
        browser,
        lambda d: d.execute_script(
            "const p = arguments[0]; return !p.hidden && p.complete && p.naturalWidth > 0;", picture
        ),
        60,
        "the explanation picture",
    )
    assert picture.get_attribute("src").startswith("blob:")
    assert SMILES[3] in picture.get_attribute("alt")
    assert browser.find_element(By.ID, "explanation-text").text.startswith(f"Row 4 ({SMILES[3]})")
    # the SVG is a picture, never markup in the page
    assert browser.execute_script("return document.querySelectorAll('main svg').length") == 0
    sent = []
    for entry in browser.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            request = event["params"]["request"]
            if request["url"].endswith("/v1/explain"):
                sent.append(json.loads(request["postData"]))
    assert sent == [{"model": "solubility", "smiles": [SMILES[3]], "svg": True}]
    selected = browser.find_elements(By.CSS_SELECTOR, "#results-table tbody tr.selected")
    assert [tr.get_attribute("data-index") for tr in selected] == ["3"]
    # new results drop the old explanation
    _submit(browser)
    assert browser.find_element(By.ID, "explanation").is_displayed() is False
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
