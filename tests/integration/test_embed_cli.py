"""``molprop embed``: every input row back, in order, with its columns, status, error and the
embedding Predictor.embed gives; CSV always, parquet when pyarrow is installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from molprop import Predictor
from molprop.cli.main import main

SMILES = ["CC(=O)Oc1ccccc1C(=O)O", "C1CC", "c1ccccc1O", "CCN(CC)CC"]
HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None


def table(tmp_path) -> str:
    path = tmp_path / "in.csv"
    pd.DataFrame({"name": ["aspirin", "bad", "phenol", "tea"], "smi": SMILES}).to_csv(
        path, index=False
    )
    return str(path)


def embed_cli(src: str, out, capsys) -> int:
    args = ["embed", "--model", "solubility", "--input", src, "--smiles-column", "smi"]
    return main([*args, "--output", str(out), "--batch-size", "2"])


def check(frame: pd.DataFrame) -> None:
    expected = Predictor.from_pretrained("solubility").embed(SMILES)
    dim = sum(c.startswith("emb_") for c in expected.columns)
    emb_cols = [f"emb_{j}" for j in range(dim)]
    assert list(frame.columns) == ["name", "smi", "status", "error", *emb_cols]
    assert frame["name"].tolist() == ["aspirin", "bad", "phenol", "tea"]
    assert frame["status"].tolist() == ["ok", "invalid_input", "ok", "ok"]
    assert str(frame["error"][1]) and frame["error"].fillna("")[0] == ""
    got, want = frame[emb_cols].to_numpy(float), expected[emb_cols].to_numpy(float)
    assert np.isnan(got[1]).all() and np.isfinite(got[[0, 2, 3]]).all()
    np.testing.assert_allclose(got[[0, 2, 3]], want[[0, 2, 3]], atol=1e-6, rtol=0)


def test_embed_cli_csv_round_trip(tmp_path, capsys) -> None:
    out = tmp_path / "sub" / "emb.csv"
    assert embed_cli(table(tmp_path), out, capsys) == 0
    assert "4 rows written" in capsys.readouterr().out
    check(pd.read_csv(out))


@pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow not installed")
def test_embed_cli_parquet_round_trip(tmp_path, capsys) -> None:
    out = tmp_path / "emb.parquet"
    assert embed_cli(table(tmp_path), out, capsys) == 0
    check(pd.read_parquet(out))


@pytest.mark.skipif(HAS_PYARROW, reason="pyarrow installed")
def test_embed_cli_parquet_without_pyarrow_is_a_clear_error(tmp_path, capsys) -> None:
    out = tmp_path / "emb.parquet"
    assert embed_cli(table(tmp_path), out, capsys) == 2
    err = capsys.readouterr().err
    assert "parquet needs pyarrow" in err and "--output" in err
    assert not out.exists()
