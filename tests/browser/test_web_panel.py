"""The web page's panel view in a real headless Chromium against a real uvicorn process serving
the shipped admet models, their panel file and a tiny multitask model: one molecule in the admet
panel shows every endpoint with its unit, interval, domain flag and percentile (equal to the
Panel's), a radar plot with one axis per endpoint, the physchem block and alerts, and downloads
the panel's columns; a table of three SMILES with an invalid one shows a per-row error and
downloads three rows (formula-like ids neutralised); a multitask model shows every target."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.coverage import measured_coverage
from molprop.inference import Panel, Predictor
from molprop.io.sink import safe_cell
from tests.api.conftest import MULTITASK_TARGETS, REPO, train_multitask, uvicorn_server
from tests.browser.conftest import require_browser
from tests.browser.test_web_page import _download, _open, _paste, _wait

SHIPPED = REPO / "pretrained"
ADMET = json.loads((SHIPPED / "panels" / "admet.json").read_text())["models"]
PANEL_FILE = SHIPPED / "panels" / "admet.json"
ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
TABLE = [("=HYPERLINK(1)", "CCO"), ("b", "C1CC"), ("c", "c1ccccc1O")]


@pytest.fixture(scope="module")
def panel_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A real uvicorn process over links to the admet panel's shipped models, the shipped
    panel file and the tiny multitask model ``esol_multi``; yields (base URL, model dir)."""
    require_browser()
    root = tmp_path_factory.mktemp("web-panel")
    models = root / "models"
    models.mkdir()
    for name in [*ADMET, "solubility"]:  # and a one-target model
        (models / name).symlink_to(SHIPPED / name, target_is_directory=True)
    (models / "panels").mkdir()
    shutil.copy(SHIPPED / "panels" / "admet.json", models / "panels" / "admet.json")
    train_multitask(models / "esol_multi", root)
    with uvicorn_server(models, root / "server.log", data_dir=str(root / "data"),
                        web_job_rows="20") as base:  # fmt: skip
        yield base, models


@pytest.fixture(scope="module")
def admet() -> Panel:
    return Panel.from_name(str(PANEL_FILE))


def _submit_panel(driver) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "predict").click()

    def finished(d) -> bool:
        text = d.find_element(By.ID, "message").text
        return (
            d.find_element(By.ID, "predict").is_enabled()
            and text not in ("", "Working…")
            and not text.startswith("Working")
        )

    _wait(driver, finished, what="the prediction")


def _profile(driver) -> list[dict]:
    """The profile's endpoint rows as the page shows them."""
    return driver.execute_script(
        """
        return [...document.querySelectorAll('#panel-endpoints tbody tr')].map(tr => ({
          target: tr.dataset.target,
          status: tr.dataset.status,
          model: tr.querySelector('td.model').textContent,
          unit: tr.querySelector('td.unit').textContent,
          value: tr.querySelector('td.value').dataset.value ?? null,
          interval: tr.querySelector('td.interval').textContent,
          coverage: tr.querySelector('td.interval').dataset.coverage ?? null,
          verdict: tr.querySelector('td.interval').dataset.verdict ?? null,
          tooltip: tr.querySelector('td.interval').title,
          note: tr.querySelector('td.interval .coverage-note')?.textContent ?? null,
          domain: tr.querySelector('td.domain').textContent,
          percentile: tr.querySelector('td.percentile').dataset.percentile ?? null,
          shown: tr.querySelector('td.percentile').textContent,
        }));
        """
    )


def _panel_rows(driver) -> list[dict]:
    return driver.execute_script(
        """
        return [...document.querySelectorAll('#panel-table tbody tr')].map(tr => ({
          index: Number(tr.dataset.index),
          status: tr.dataset.status,
          id: tr.querySelector('td.id').textContent,
          smiles: tr.querySelector('td.smiles').textContent,
          error: tr.querySelector('td.error').textContent,
          values: Object.fromEntries([...tr.querySelectorAll('td.endpoint')].map(
            td => [td.dataset.target, td.dataset.value ?? null])),
        }));
        """
    )


def _download_panel(driver, download_dir: Path) -> list[list[str]]:
    path = _download(driver, download_dir, "panel-download")
    assert path.name.startswith("molprop_admet_panel")
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _close(got: str | None, want: object) -> bool:
    return got is not None and float(got) == pytest.approx(float(want), rel=1e-6, abs=1e-9)


def test_one_molecule_shows_every_endpoint_a_radar_and_downloads_the_panel(
    browser, panel_server, admet: Panel, download_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    base, _ = panel_server
    browser.get_log("browser")  # drop what earlier tests left
    _open(browser, base, "admet")
    shown = [c.get_attribute("data-model") for c in browser.find_elements(
        By.CSS_SELECTOR, "article.card") if c.is_displayed()]  # fmt: skip
    assert shown == ["admet"]  # the panel's card: its description and endpoints
    _paste(browser, [ASPIRIN])
    _submit_panel(browser)
    assert browser.find_element(By.ID, "message").text == "Done."
    assert browser.find_element(By.ID, "panel-results").is_displayed()
    assert not browser.find_element(By.ID, "results").is_displayed()
    assert not browser.find_element(By.ID, "panel-table").is_displayed()  # one molecule
    want = admet.predict([ASPIRIN], interval=0.9).iloc[0]
    rows = _profile(browser)
    assert [r["target"] for r in rows] == admet.target_names and len(rows) == 29
    for row, endpoint in zip(rows, admet.endpoints):
        t = endpoint.target
        assert (row["model"], row["unit"], row["status"]) == (endpoint.model, endpoint.unit, "ok")
        assert row["unit"]  # every shipped endpoint has one
        assert _close(row["value"], want[t])
        assert _close(row["percentile"], want[f"{t}_percentile"])
        assert row["shown"] == f"{float(want[f'{t}_percentile']):.1f}"
        assert row["domain"].startswith("yes" if want[f"{t}_in_domain"] else "no")
        if endpoint.task_type == "regression" and not pd.isna(want.get(f"{t}_low", np.nan)):
            assert " – " in row["interval"]
        else:
            assert row["interval"] == ""
    # each interval says how the owning model's 90 % intervals covered its test molecules
    # (its metrics.json), and flags where that is significantly off the stated level
    verdicts = {}
    for row, endpoint in zip(rows, admet.endpoints):
        metrics = json.loads((SHIPPED / endpoint.model / "metrics.json").read_text())
        measured = {c.level: c for c in measured_coverage(metrics).get(endpoint.target, ())}
        if not row["interval"]:
            assert row["coverage"] is None and row["note"] is None
            continue
        c = measured[0.9]
        assert _close(row["coverage"], c.coverage) and row["verdict"] == c.verdict
        assert f"{c.n} test molecules" in row["tooltip"]
        assert row["note"] == (
            None if c.verdict == "holds" else f"held {round(c.coverage * 100, 1):g} % in test"
        )
        verdicts[endpoint.target] = c.verdict
    assert verdicts["clearance_microsome_rat"] == "below"  # 78 % of 127 (the card's table)
    assert verdicts["solubility_aqsoldb"] == "holds"
    # the radar: one axis and one point per endpoint, at its percentile
    radar = browser.find_element(By.CSS_SELECTOR, "#panel-radar svg.radar")
    assert radar.get_attribute("data-axes") == str(len(admet.target_names))
    axes = browser.find_elements(By.CSS_SELECTOR, "#panel-radar line.radar-axis")
    assert [a.get_attribute("data-target") for a in axes] == admet.target_names
    points = browser.find_elements(By.CSS_SELECTOR, "#panel-radar circle.radar-point")
    assert {p.get_attribute("data-target"): float(p.get_attribute("data-percentile"))
            for p in points} == {t: pytest.approx(float(want[f"{t}_percentile"]))
                                 for t in admet.target_names}  # fmt: skip
    assert radar.size["width"] > 200  # drawn, not collapsed
    # physchem and alerts of the molecule
    tpsa = browser.find_element(By.CSS_SELECTOR, "#panel-properties tr[data-property='tpsa']")
    assert "Å²" in tpsa.text and float(tpsa.text.split()[1]) == pytest.approx(
        want["tpsa"], abs=1e-3
    )
    alerts = browser.find_elements(By.CSS_SELECTOR, "#panel-alerts li")
    assert [a.get_attribute("data-alerts") for a in alerts] == ["pains", "brenk", "nih"]
    rules = browser.find_element(By.CSS_SELECTOR, "#panel-rules li[data-rule='lipinski_pass']")
    assert rules.text.endswith("yes")
    # the CSV has the panel's columns (as `molprop predict --model admet` writes), one row
    table = _download_panel(browser, download_dir)
    head, body = table[0], table[1:]
    assert head == ["id", *admet.columns]
    assert len(body) == 1 and body[0][:5] == ["1", ASPIRIN, ASPIRIN, "ok", ""]
    for t in admet.target_names:
        assert _close(body[0][head.index(t)], want[t])
        assert _close(body[0][head.index(f"{t}_percentile")], want[f"{t}_percentile"])
        # spreadsheet-safe as the CLI writes it ("-log10(...)" would be a formula)
        assert body[0][head.index(f"{t}_unit")] == safe_cell(want[f"{t}_unit"])
    assert body[0][head.index("described_smiles")] == want["described_smiles"]
    assert int(body[0][head.index("n_alerts")]) == int(want["n_alerts"])
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []  # no CSP violation, no script error


def test_a_table_with_an_invalid_smiles_shows_a_per_row_error(
    browser, panel_server, admet: Panel, download_dir: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    base, _ = panel_server
    upload = tmp_path / "molecules.csv"
    with open(upload, "w", newline="") as fh:
        csv.writer(fh).writerows([("name", "SMILES"), *TABLE])
    _open(browser, base, "admet")
    browser.find_element(By.ID, "csv-file").send_keys(str(upload))
    browser.find_element(By.ID, "id-column").send_keys("name")
    _submit_panel(browser)
    assert "1 of 3 rows could not be predicted" in browser.find_element(By.ID, "message").text
    assert browser.find_element(By.ID, "panel-table").is_displayed()
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#panel-table thead th")]
    for endpoint in admet.endpoints:
        assert f"{endpoint.target} ({endpoint.unit})" in headers
    rows = _panel_rows(browser)
    assert [r["id"] for r in rows] == [i for i, _ in TABLE]  # shown as typed
    assert [r["smiles"] for r in rows] == [s for _, s in TABLE]
    assert [r["status"] for r in rows] == ["ok", "invalid_input", "ok"]
    assert "could not parse" in rows[1]["error"] and set(rows[1]["values"].values()) == {None}
    want = admet.predict([s for _, s in TABLE], interval=0.9)
    for i in (0, 2):
        for t in admet.target_names:
            assert _close(rows[i]["values"][t], want[t][i])
    # a row's profile on click
    browser.find_element(By.CSS_SELECTOR, "#panel-table tbody tr[data-index='2']").click()
    _wait(browser, lambda d: d.find_element(By.ID, "panel-detail").is_displayed(), 10, "profile")
    assert "c1ccccc1O" in browser.find_element(By.ID, "panel-detail-text").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#panel-radar line.radar-axis")) == len(
        admet.target_names
    )
    table = _download_panel(browser, download_dir)
    head, body = table[0], table[1:]
    assert head == ["id", *admet.columns] and len(body) == 3
    assert [r[0] for r in body] == ["'=HYPERLINK(1)", "b", "c"]  # no formula in a spreadsheet
    assert [r[head.index("status")] for r in body] == ["ok", "invalid_input", "ok"]
    assert "could not parse" in body[1][head.index("error")]
    assert body[1][head.index(admet.target_names[0])] == ""


def test_a_multitask_model_shows_every_target_and_a_single_model_still_works(
    browser, panel_server
) -> None:
    from selenium.webdriver.common.by import By

    base, models = panel_server
    _open(browser, base, "esol_multi")
    _paste(browser, ["CCO", "not a smiles", "c1ccccc1O"])
    _submit_panel(browser)
    assert "1 of 3 rows could not be predicted" in browser.find_element(By.ID, "message").text
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#panel-table thead th")]
    assert [h for h in headers if "(" in h] == [f"{t} ({u})" for t, u in MULTITASK_TARGETS.items()]
    want = Predictor.from_pretrained(models / "esol_multi").predict(["CCO", "c1ccccc1O"])
    rows = _panel_rows(browser)
    assert [r["status"] for r in rows] == ["ok", "invalid_input", "ok"]
    for row, i in ((rows[0], 0), (rows[2], 1)):
        for t in MULTITASK_TARGETS:
            assert _close(row["values"][t], want[t][i])
    # a one-target model after it: the single-model table, the panel view hidden
    _open(browser, base, "solubility")
    _paste(browser, ["CCO"])
    _submit_panel(browser)
    assert browser.find_element(By.ID, "results").is_displayed()
    assert not browser.find_element(By.ID, "panel-results").is_displayed()
    value = browser.find_element(By.ID, "value-header").text
    assert value == "Value (logS, log10(mol/L))"
