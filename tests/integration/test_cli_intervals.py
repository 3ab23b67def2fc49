"""``molprop predict --interval``: calibrated ``<target>_low`` / ``<target>_high`` columns from
the streaming path (any chunking gives the same rows), off with ``none``, bad levels refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.cli.main import main
from molprop.inference import Predictor

SMILES = ["CCO", "not a smiles", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "", "CCN(CC)CC"]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "in.csv"
    pd.DataFrame({"smiles": SMILES, "id": range(len(SMILES))}).to_csv(path, index=False)
    return path


def _predict(table: Path, out: Path, *extra: str) -> pd.DataFrame:
    argv = ["predict", "--model", "solubility", "--input", str(table), "--output", str(out)]
    assert main([*argv, "--no-progress", *extra]) == 0
    return pd.read_csv(out)


def test_default_interval_columns(table: Path, tmp_path: Path) -> None:
    out = _predict(table, tmp_path / "a.csv")
    assert {"logS_low", "logS_high"} <= set(out.columns)
    ok = out["status"] == "ok"
    assert (out.loc[ok, "logS_low"] < out.loc[ok, "logS"]).all()
    assert (out.loc[ok, "logS"] < out.loc[ok, "logS_high"]).all()
    assert out.loc[~ok, ["logS_low", "logS_high"]].isna().all().all()
    # the same as the Python API, and chunking does not change a row
    frame = Predictor.from_pretrained("solubility").predict(SMILES)
    assert np.allclose(out["logS_low"], frame["logS_low"], equal_nan=True, rtol=1e-5, atol=1e-5)
    chunked = _predict(table, tmp_path / "b.csv", "--chunk-size", "2")
    assert np.allclose(chunked["logS_high"], out["logS_high"], equal_nan=True, rtol=1e-5, atol=1e-5)


def test_interval_level_and_off(table: Path, tmp_path: Path) -> None:
    wide = _predict(table, tmp_path / "a.csv", "--interval", "0.95")
    narrow = _predict(table, tmp_path / "b.csv", "--interval", "0.5")
    ok = wide["status"] == "ok"
    width = lambda f: (f["logS_high"] - f["logS_low"])[ok]  # noqa: E731
    assert (width(wide) > width(narrow)).all()
    for off in ("none", "0"):
        plain = _predict(table, tmp_path / f"{off}.csv", "--interval", off)
        assert "logS_low" not in plain.columns and "logS_high" not in plain.columns


def test_bad_levels_refused(table: Path, tmp_path: Path, capsys) -> None:
    argv = ["predict", "--model", "solubility", "--input", str(table), "--output"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, str(tmp_path / "x.csv"), "--interval", "1.5"])
    assert exc.value.code == 2 and "between 0 and 1" in capsys.readouterr().err
    # 112 validation molecules cannot give a 99.9 % interval
    assert main([*argv, str(tmp_path / "y.csv"), "--interval", "0.999"]) == 2
    assert "highest level" in capsys.readouterr().err
    assert not (tmp_path / "y.csv").exists()


def test_classifier_reports_calibrated_probability(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "bbb.csv"
    argv = ["predict", "--model", "bbb_penetration", "--input", str(table), "--output", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    frame = pd.read_csv(out)
    assert (
        "bbb_probability_uncalibrated" in frame.columns
        and "bbb_probability_low" not in frame.columns
    )
    ok = frame["status"] == "ok"
    assert not np.allclose(
        frame.loc[ok, "bbb_probability"], frame.loc[ok, "bbb_probability_uncalibrated"]
    )
    assert frame.loc[ok, "bbb_probability"].between(0, 1).all()
