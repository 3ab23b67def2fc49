"""``molprop predict`` on inputs and models it cannot use: a file that is not UTF-8, binary, a
truncated ``.gz``; a model directory with sizes that disagree with its weights, zero sizes,
NaN in its calibration, a card linked outside it. Each ends with one line
``molprop predict: error: <reason naming the file>`` and exit status 2, never a traceback; a
tiny interval level is served."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from molprop.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "pretrained" / "solubility"
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC"] * 50


def _truncated_gz(path: Path) -> Path:
    header = ["smiles"] if ".csv" in path.name else []
    whole = gzip.compress(("\n".join(header + SMILES) + "\n").encode())
    path.write_bytes(whole[: len(whole) // 2])
    return path


def _inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    latin = tmp_path / "latin1.smi"
    latin.write_bytes("CCO ethanol\nc1ccccc1O ph\xe9nol\n".encode("latin-1"))
    latin_csv = tmp_path / "latin1.csv"
    latin_csv.write_bytes("smiles,name\nCCO,\xe9thanol\n".encode("latin-1"))
    binary = tmp_path / "binary.smi"
    binary.write_bytes(bytes(range(256)) * 16)
    nul = tmp_path / "nul.smi"
    nul.write_bytes(b"CCO\nCC\x00O\n")
    xlsx = tmp_path / "assay.xlsx"
    with zipfile.ZipFile(xlsx, "w") as archive:  # laid out like an Excel workbook
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    return {
        "assay.xlsx": (xlsx, "save the sheet as CSV (in Excel: File > Save As > CSV UTF-8)"),
        "latin1.smi": (latin, "not UTF-8"),
        "latin1.csv": (latin_csv, "not UTF-8"),
        "binary.smi": (binary, "not UTF-8"),
        "nul.smi": (nul, "NUL byte"),
        "cut.smi.gz": (_truncated_gz(tmp_path / "cut.smi.gz"), "Compressed file ended"),
        "cut.csv.gz": (_truncated_gz(tmp_path / "cut.csv.gz"), "Compressed file ended"),
    }


def _one_error_line(err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if "molprop predict: error:" in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    "name",
    ["latin1.smi", "latin1.csv", "binary.smi", "nul.smi", "cut.smi.gz", "cut.csv.gz", "assay.xlsx"],
)
def test_unreadable_input_one_line_exit_2(tmp_path: Path, capsys, name: str) -> None:
    path, reason = _inputs(tmp_path)[name]
    code = main(
        ["predict", "--model", str(SHIPPED), "--input", str(path), "--output",
         str(tmp_path / "out.csv")]
    )  # fmt: skip
    assert code == 2
    _one_error_line(capsys.readouterr().err, reason, str(path))
    assert not (tmp_path / "out.csv").exists()


def _model(tmp_path: Path, name: str, edit) -> Path:
    target = Path(shutil.copytree(SHIPPED, tmp_path / name))
    edit(target)
    return target


def _json(file: str, change):
    def edit(directory: Path) -> None:
        data = json.loads((directory / file).read_text())
        change(data)
        (directory / file).write_text(json.dumps(data))

    return edit


BROKEN = {
    "wide": (_json("config.json", lambda d: d["model"].update(hidden_dim=2048)), "shape mismatch"),
    "zero": (_json("config.json", lambda d: d["model"].update(hidden_dim=0)), "hidden_dim"),
    "nan_cal": (
        _json(
            "calibration.json",
            lambda d: next(iter(d["targets"].values()))["residuals"].__setitem__(0, math.nan),
        ),
        "calibration.json",
    ),
    "members_out": (
        lambda d: (
            shutil.move(str(d / "members"), d.parent / "m"),
            (d / "members").symlink_to(d.parent / "m"),
        ),
        "outside the model directory",
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_model_one_line_exit_2(tmp_path: Path, capsys, name: str) -> None:
    edit, reason = BROKEN[name]
    model = _model(tmp_path, name, edit)
    source = tmp_path / "in.smi"
    source.write_text("\n".join(SMILES[:4]) + "\n")
    code = main(
        ["predict", "--model", str(model), "--input", str(source), "--output",
         str(tmp_path / "out.csv")]
    )  # fmt: skip
    assert code == 2
    _one_error_line(capsys.readouterr().err, reason, str(model))


def test_console_script_truncated_gz_one_line(tmp_path: Path) -> None:
    """The console script itself: stderr has the one error line and no traceback."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}
    cut = _truncated_gz(tmp_path / "cut.smi.gz")
    run = subprocess.run(
        [sys.executable, "-m", "molprop.cli.main", "predict", "--model", str(SHIPPED),
         "--input", str(cut), "--output", str(tmp_path / "out.csv")],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    _one_error_line(run.stderr, "Compressed file ended", str(cut))


def test_tiny_interval_level_served(tmp_path: Path) -> None:
    source = tmp_path / "in.smi"
    source.write_text("\n".join(SMILES[:4]) + "\n")
    out = tmp_path / "out.csv"
    code = main(
        ["predict", "--model", str(SHIPPED), "--input", str(source), "--output", str(out),
         "--interval", "1e-20"]
    )  # fmt: skip
    assert code == 0
    table = pd.read_csv(out)
    assert (table["status"] == "ok").all()
    value, low, high = _interval_columns(table)
    assert (low <= value).all() and (value <= high).all() and (low < high).all()


def _interval_columns(table: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """The prediction and its interval bounds (``<column>``, ``<column>_low``, ``_high``)."""
    low = next(c for c in table.columns if c.endswith("_low"))
    name = low.removesuffix("_low")
    return table[name], table[low], table[f"{name}_high"]
