"""``molprop physchem``: one row per input row (SDF records too), input columns kept even when
named like an output column, per-row errors."""

from __future__ import annotations

import pandas as pd

from molprop.cli.main import main
from molprop.inference.physchem import physchem_frame


def test_csv_rows_in_order_and_input_columns_kept(tmp_path, capsys) -> None:
    given = pd.DataFrame(
        {"name": ["aspirin", "bad", "azo"], "smi": ["CC(=O)Oc1ccccc1C(=O)O", "C1CC", "Oc1ccccc1N=Nc1ccccc1"],
         "tpsa": ["measured 63", "", "n/a"]}
    )  # fmt: skip
    given.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "out.csv"
    argv = ["physchem", "--input", str(tmp_path / "in.csv"), "--smiles-column", "smi"]
    assert main([*argv, "--output", str(out)]) == 0
    assert "3 rows written" in capsys.readouterr().out
    got = pd.read_csv(out, keep_default_na=False)
    assert got[["name", "smi", "tpsa"]].astype(str).equals(given.astype(str))  # untouched
    assert got["status"].tolist() == ["ok", "invalid_input", "ok"]
    expected = physchem_frame(given["smi"].tolist())
    assert float(got["pred_tpsa"][0]) == expected["tpsa"][0]
    assert got["pred_tpsa"][1] == "" and got["error"][1]


def test_smiles_on_the_command_line(tmp_path) -> None:
    out = tmp_path / "out.csv"
    assert main(["physchem", "--smiles", "CCO", "c1ccccc1O", "--output", str(out)]) == 0
    got = pd.read_csv(out)
    assert got["smiles"].tolist() == ["CCO", "c1ccccc1O"] and (got["status"] == "ok").all()
    assert got["heavy_atoms"].tolist() == [3, 7]
