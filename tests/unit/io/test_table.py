from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from molprop.errors import DataError
from molprop.featurize import Graph2DFeaturizer
from molprop.io.readers import iter_chunks
from molprop.io.table import load_molecule_table, read_table

F = Graph2DFeaturizer().from_smiles


def _frame():
    return pd.DataFrame(
        {
            "smiles": ["CCO", "not_a_smiles", "c1ccccc1", "", "CC(=O)O", "CCN"],
            "y1": ["1.0", "2.0", "", "3", "abc", ""],
            "y2": ["0.5", "1", "2", "3", "4", ""],
        }
    ).astype(str)


def test_invalid_rows_reported_with_row_smiles_and_reason():
    table = load_molecule_table(_frame(), "smiles", ["y1", "y2"], F, progress=False)
    assert table.rows.tolist() == [0, 2]  # row 2 has a blank y1 but a y2 label: kept
    reasons = {i.row: i.reason for i in table.invalid}
    assert set(reasons) == {1, 3, 4, 5}
    assert "RDKit" in reasons[1]
    assert "empty" in reasons[3]
    assert "'abc'" in reasons[4] and "y1" in reasons[4]
    assert "no target" in reasons[5]
    assert np.isnan(table.targets[1, 0]) and table.targets[1, 1] == 2.0
    issue = next(i for i in table.invalid if i.row == 1)
    assert "row 1" in issue.describe() and "not_a_smiles" in issue.describe()


def test_invalid_error_mode_raises_listing_rows():
    with pytest.raises(DataError) as err:
        load_molecule_table(_frame(), "smiles", ["y1"], F, invalid="error", progress=False)
    assert "row 1" in str(err.value) and "row 4" in str(err.value)


def test_missing_column_names_available_columns():
    with pytest.raises(DataError) as err:
        load_molecule_table(_frame(), "smiles", ["nope"], F, progress=False)
    assert "nope" in str(err.value) and "y1" in str(err.value)


def test_real_esol_all_valid(esol_frame):
    table = load_molecule_table(esol_frame.astype(str), "smiles", ["logp"], F, progress=False)
    assert len(table) == 1128 and not table.invalid
    assert table.targets.shape == (1128, 1)


def test_numeric_dataframe_columns_are_accepted():
    frame = pd.DataFrame({"smiles": ["CCO", None, "CCN"], "y": [1.5, 2.0, np.nan]})
    frame.loc[3] = ["CC", 4.0]
    table = load_molecule_table(frame, "smiles", ["y"], F, progress=False)
    assert table.rows.tolist() == [0, 3]
    assert table.targets[:, 0].tolist() == [1.5, 4.0]
    reasons = {i.row: i.reason for i in table.invalid}
    assert "empty" in reasons[1] and "no target" in reasons[2]


def test_blank_lines_are_rows_reported_per_row(tmp_path):
    """pandas skipped blank (and whitespace-only) lines: they vanished from training tables and
    every later row got the wrong row and line number. As in ``molprop predict``, a blank line
    is a row with an empty SMILES, reported as invalid; data row i is file line i + 2."""
    path = tmp_path / "assay.csv"
    path.write_text("smiles,y\nCCO,1.0\n\nc1ccccc1,2.0\n   \nnot_a_smiles,4\nCCN,5\n")
    frame = read_table(path)
    assert frame.values.tolist() == [
        ["CCO", "1.0"],
        ["", ""],
        ["c1ccccc1", "2.0"],
        ["", ""],
        ["not_a_smiles", "4"],
        ["CCN", "5"],
    ]
    streamed = pd.concat([c.frame for c in iter_chunks(path, "smiles")], ignore_index=True)
    pd.testing.assert_frame_equal(streamed, frame)  # one parser for tables and streaming

    table = load_molecule_table(path, "smiles", ["y"], F, progress=False)
    assert table.rows.tolist() == [0, 2, 5]
    assert table.targets[:, 0].tolist() == [1.0, 2.0, 5.0]
    reasons = {i.row: i.reason for i in table.invalid}
    assert sorted(reasons) == [1, 3, 4]
    assert "empty" in reasons[1] and "empty" in reasons[3] and "RDKit" in reasons[4]
    bad = next(i for i in table.invalid if i.row == 4)
    assert "(line 6)" in bad.describe()  # not_a_smiles is on line 6 of the file


def test_one_column_table_keeps_blank_lines(tmp_path):
    path = tmp_path / "one.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("smiles\nCCO\n\nCC\n")
    assert read_table(path)["smiles"].tolist() == ["CCO", "", "CC"]


def test_trailing_separator_is_an_error_naming_the_line(tmp_path):
    """pandas took the first column as the index when rows have one field more than the header,
    so the SMILES column silently held the targets."""
    path = tmp_path / "shifted.csv"
    path.write_text("smiles,y\nCCO,1.0,\nCC,2.0,\n")
    with pytest.raises(DataError, match="line 2: 3 fields but the header has 2"):
        read_table(path)


def test_header_only_and_empty_files(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("smiles\ty\n")
    frame = read_table(path)
    assert list(frame.columns) == ["smiles", "y"] and len(frame) == 0
    with pytest.raises(DataError, match="no rows"):
        load_molecule_table(path, "smiles", ["y"], F, progress=False)
    path.write_text("")
    with pytest.raises(DataError, match="empty"):
        read_table(path)
