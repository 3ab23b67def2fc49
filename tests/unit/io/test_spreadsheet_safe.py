"""CSV outputs are spreadsheet-safe: text cells a spreadsheet would run as a formula get a
leading quote (OWASP), numbers stay numbers; ``csv_records`` (every streamed output and job
result) and ``write_csv`` (whole-frame outputs) apply it."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from molprop.io.sink import csv_records, safe_cell, spreadsheet_safe, write_csv

PAYLOADS = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://x")',
    "@SUM(1)",
    "+1+1",
    "-2+3",
    "\t=1",
    "\r=1",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_formula_text_gets_a_leading_quote(payload):
    assert safe_cell(payload) == "'" + payload


@pytest.mark.parametrize(
    "value", ["-1.23", "+4e-5", "-.5", "12", "-inf", "CCO", "", "C=O", " =1", "'=1"]
)
def test_numbers_and_plain_text_are_unchanged(value):
    assert safe_cell(value) == value


def test_csv_records_quote_text_cells_and_keep_numbers():
    frame = pd.DataFrame(
        {
            "id": [PAYLOADS[0], "-7", "a"],
            "smiles": [PAYLOADS[1], PAYLOADS[2], "CCO"],
            "logp": [-1.25, np.nan, 2.0],
            "in_domain": pd.array([True, None, False], dtype="boolean"),
            "=x": ["-3", "+1+1", "ok"],
        }
    )
    rows = list(csv.reader(io.StringIO(csv_records(frame, header=True))))
    assert rows[0] == ["id", "smiles", "logp", "in_domain", "'=x"]
    assert rows[1] == ["'" + PAYLOADS[0], "'" + PAYLOADS[1], "-1.25", "True", "-3"]
    assert rows[2] == ["-7", "'" + PAYLOADS[2], "", "", "'+1+1"]
    assert rows[3] == ["a", "CCO", "2.0", "False", "ok"]
    assert frame["id"].iloc[0] == PAYLOADS[0]  # the caller's frame is not changed
    assert spreadsheet_safe(frame)["smiles"].iloc[2] == "CCO"


def test_quoting_is_idempotent():
    """Text read back from a safe CSV and written again (the parts of a multi-process run are
    merged so) is unchanged."""
    text = [p for p in PAYLOADS if "\r" not in p]  # a bare CR is a line end to CSV readers
    frame = pd.DataFrame({"smiles": [*text, "CCO"], "v": [-1.5, np.inf, -np.inf, 0, 1, 2, 3]})
    once = csv_records(frame, header=True)
    again = csv_records(pd.read_csv(io.StringIO(once), dtype=str, keep_default_na=False), True)
    assert again == once


def test_write_csv_is_safe_too(tmp_path):
    path = tmp_path / "out.csv.gz"
    write_csv(pd.DataFrame({"smiles": ["@SUM(1)"], "v": [-0.5]}), path, compression="gzip")
    back = pd.read_csv(path, dtype=str)
    assert back.to_dict("records") == [{"smiles": "'@SUM(1)", "v": "-0.5"}]
