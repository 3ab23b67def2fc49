"""The web page's downloads never lose data, in a real headless Chromium against a real
uvicorn process: a pasted batch's CSV (built by the page) quotes formula payloads and keeps
numbers as numbers; an uploaded table with a measured column named like the target becomes a
job whose table shows the predictions (``pred_<target>``), not the measured values, and whose
download keeps the measured column as it was."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from tests.api.conftest import DATA
from tests.browser.test_web_page import _download, _open, _paste, _rows, _submit, _wait

PAYLOADS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x")', "@SUM(1)", "+1+1"]


def test_a_pasted_batch_downloads_payloads_quoted_and_numbers_as_numbers(
    browser, web_server: str, download_dir: Path
) -> None:
    lines = ["CCO", *PAYLOADS, "c1ccccc1O", "CCCCCCCCCCCCCCCC"]
    _open(browser, web_server, "solubility")
    _paste(browser, lines)
    _submit(browser)
    rows = _rows(browser)
    assert [r["smiles"] for r in rows] == lines  # the table shows the text as typed
    path = _download(browser, download_dir)
    with open(path, newline="") as fh:
        table = list(csv.reader(fh))
    head, body = table[0], table[1:]
    assert head[:4] == ["id", "smiles", "standardized_smiles", "logp"]
    smiles = [r[head.index("smiles")] for r in body]
    assert smiles == ["CCO", *["'" + p for p in PAYLOADS], "c1ccccc1O", "CCCCCCCCCCCCCCCC"]
    values = {r[head.index("smiles")]: r[head.index("logp")] for r in body}
    shown = {r["smiles"]: r["value"] for r in rows}
    for smi in ("CCO", "c1ccccc1O", "CCCCCCCCCCCCCCCC"):
        assert float(values[smi]) == pytest.approx(float(shown[smi]), rel=1e-6, abs=1e-9)
        assert not values[smi].startswith("'")  # a number, negative or not, stays a number
    assert any(float(values[s]) < 0 for s in ("c1ccccc1O", "CCCCCCCCCCCCCCCC"))
    for cell in (c for r in body for c in r):
        if cell[:1] in ("=", "+", "-", "@"):
            float(cell)  # only numbers may start so


def test_a_job_with_a_measured_target_column_shows_and_downloads_both(
    browser, web_server: str, tmp_path: Path, download_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    esol = pd.read_csv(DATA / "delaney_chemprop.csv.gz", dtype=str, keep_default_na=False)
    frame = esol.head(40)[["smiles", "logp"]]
    frame.insert(0, "compound", [f"E{i}" for i in range(40)])
    frame.loc[[1, 2, 3, 4], "compound"] = PAYLOADS
    source = tmp_path / "measured.csv"
    frame.to_csv(source, index=False)
    _open(browser, web_server, "solubility")
    browser.find_element(By.ID, "csv-file").send_keys(str(source))
    browser.find_element(By.ID, "id-column").send_keys("compound")
    browser.find_element(By.ID, "predict").click()
    _wait(browser, lambda d: "done:" in d.find_element(By.ID, "message").text, 120, "the job")
    rows = _rows(browser)
    assert len(rows) == 40 and all(r["status"] == "ok" for r in rows)

    out = pd.read_csv(_download(browser, download_dir), dtype=str, keep_default_na=False)
    assert out.columns[:4].tolist() == ["compound", "smiles", "logp", "standardized_smiles"]
    assert out["logp"].tolist() == frame["logp"].tolist()  # the measured values, untouched
    assert out["compound"].tolist()[1:5] == ["'" + p for p in PAYLOADS]
    # the table's values are the predictions (pred_logp), not the measured column
    shown = [float(r["value"]) for r in rows]
    assert shown == pytest.approx(out["pred_logp"].astype(float).tolist(), rel=1e-6)
    assert shown != pytest.approx(out["logp"].astype(float).tolist(), rel=1e-3)
