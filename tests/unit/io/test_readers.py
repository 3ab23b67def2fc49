"""Input readers of ``molprop predict``: every line is a row, ragged rows name their line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from molprop.errors import DataError
from molprop.io.readers import count_records, iter_chunks


def rows(path: Path, column: str = "smiles", chunk_size: int = 2) -> pd.DataFrame:
    chunks = list(iter_chunks(path, column, chunk_size))
    assert [c.start for c in chunks] == list(range(0, chunk_size * len(chunks), chunk_size))
    return pd.concat([c.frame for c in chunks], ignore_index=True)


def test_blank_lines_of_a_one_column_csv_are_rows(tmp_path: Path) -> None:
    """pandas skips blank lines, so a one-column file lost rows silently (and output row i no
    longer matched input line i + 2)."""
    path = tmp_path / "one.csv"
    path.write_text("smiles\nCCO\n\nc1ccccc1O\n\n   \nCC\n")
    got = rows(path)
    assert got["smiles"].tolist() == ["CCO", "", "c1ccccc1O", "", "   ", "CC"]
    assert len(got) == count_records(path) == 6


def test_blank_line_of_a_wider_csv_is_an_empty_row(tmp_path: Path) -> None:
    path = tmp_path / "two.csv"
    path.write_text('id,smiles\n1,CCO\n\n3,"c1ccccc1 O"\n4,\n')
    got = rows(path)
    assert got.values.tolist() == [["1", "CCO"], ["", ""], ["3", "c1ccccc1 O"], ["4", ""]]


@pytest.mark.parametrize(
    "body, line, fields",
    [
        ("CCO,ethanol,\nCC,ethane,\n", 2, 3),  # trailing commas: pandas shifted every column
        ("CCO,ethanol\nCC,ethane,extra\n", 3, 3),
        ("CCO,ethanol\nCC\n", 3, 1),
        ('CCO,"two\nlines"\nCC,ethane\nC,methane,x\n', 5, 3),  # a record spans lines 2-3
    ],
)
def test_ragged_rows_are_an_error_naming_the_line(tmp_path, body, line, fields) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("smiles,name\n" + body)
    with pytest.raises(DataError, match=rf"line {line}: {fields} fields but the header has 2"):
        rows(path)


def test_trailing_comma_is_not_taken_as_an_index(tmp_path: Path) -> None:
    """What pandas did: the SMILES column silently received the names."""
    path = tmp_path / "shift.csv"
    path.write_text("smiles,name\nCCO,ethanol,\nCC,ethane,\n")
    assert pd.read_csv(path, dtype=str)["smiles"].tolist() == ["ethanol", "ethane"]
    with pytest.raises(DataError, match="line 2"):
        rows(path)


def test_header_names_bom_tsv_and_gzip(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "in.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\ufeffsmiles\tx\tx\t\nCCO\t1\t2\t\n")
    got = rows(path)
    assert list(got.columns) == ["smiles", "x", "x.1", "Unnamed: 3"]
    assert got.values.tolist() == [["CCO", "1", "2", ""]]


def test_missing_column_and_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("smi\nCCO\n")
    with pytest.raises(DataError, match=r"\['smiles'\] not found"):
        rows(path)
    path.write_text("")
    assert list(iter_chunks(path, "smiles")) == []
    path.write_text("smiles\n")
    assert list(iter_chunks(path, "smiles")) == []


def test_blank_lines_of_a_smi_file_are_rows(tmp_path: Path) -> None:
    path = tmp_path / "in.smi"
    path.write_text("CCO ethanol\n\nc1ccccc1O phenol\n  \nCC\n")
    got = rows(path)
    assert got.values.tolist() == [
        ["CCO", "ethanol"],
        ["", ""],
        ["c1ccccc1O", "phenol"],
        ["", ""],
        ["CC", ""],
    ]
    assert len(got) == count_records(path)


def test_resume_skip_counts_blank_rows(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("smiles\nCCO\n\nc1ccccc1O\n\nCC\n")
    chunks = list(iter_chunks(path, "smiles", chunk_size=2, skip=3))
    assert [(c.start, c.frame["smiles"].tolist()) for c in chunks] == [(3, [""]), (4, ["CC"])]
