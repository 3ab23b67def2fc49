"""``molprop predict`` never loses data: a measured column named like the model's target stays
as it was (the prediction is ``pred_<target>``), an SDF gives one row per record even with a
garbage record among them, and formula payloads in SMILES and id cells come back quoted (the
spreadsheet does not run them) while negative predictions stay numbers."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rdkit import Chem

from molprop.cli.main import main
from molprop.inference import Predictor

PAYLOADS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x")', "@SUM(1)", "+1+1"]


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    """The shipped ``solubility`` model: its target is ``logS`` (log solubility; ESOL's own
    column is called ``logp``)."""
    return Predictor.from_pretrained("solubility")


def _predict(src: Path, out: Path, *extra: str) -> pd.DataFrame:
    code = main(
        ["predict", "--model", "solubility", "--input", str(src), "--output", str(out),
         "--no-progress", "--chunk-size", "7", *extra]
    )  # fmt: skip
    assert code == 0
    return pd.read_csv(out, dtype=str, keep_default_na=False)


def test_a_measured_target_column_is_kept_and_payloads_are_quoted(tmp_path, esol_path, solubility):
    esol = pd.read_csv(esol_path, dtype=str, keep_default_na=False).head(20)
    frame = pd.DataFrame(
        {"id": [f"E{i}" for i in range(20)], "smiles": esol["smiles"], "logS": esol["logp"]}
    )
    frame.loc[[3, 8, 13, 18], "smiles"] = PAYLOADS
    frame.loc[[4, 9, 14, 19], "id"] = PAYLOADS
    src = tmp_path / "measured.csv"
    frame.to_csv(src, index=False)
    out = _predict(src, tmp_path / "out.csv")

    assert out.columns[:4].tolist() == ["id", "smiles", "logS", "standardized_smiles"]
    assert "pred_logS" in out.columns
    assert out["logS"].tolist() == esol["logp"].tolist()  # the measured values, untouched
    quoted = {i: "'" + p for i, p in zip([3, 8, 13, 18], PAYLOADS)}
    assert [out["smiles"][i] for i in quoted] == list(quoted.values())
    assert [out["id"][i] for i in (4, 9, 14, 19)] == ["'" + p for p in PAYLOADS]
    assert (out.loc[list(quoted), "status"] == "invalid_input").all()
    expected = solubility.predict(frame["smiles"].tolist())
    ok = out["status"] == "ok"
    assert ok.sum() == (expected["status"] == "ok").sum() == 16
    predicted = out.loc[ok, "pred_logS"].astype(float)
    np.testing.assert_allclose(predicted, expected.loc[ok, "logS"], rtol=1e-5)
    assert (predicted < 0).sum() >= 10  # negative predictions, written as plain numbers
    assert not out.loc[ok, "pred_logS"].str.startswith("'").any()
    assert not out["logS"].str.startswith("'").any()
    # no cell a spreadsheet would run: every cell starting =, +, - or @ is a number
    with open(tmp_path / "out.csv", newline="") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    for cell in cells:
        if cell[:1] in ("=", "+", "-", "@"):
            float(cell)


def _sdf_with_a_garbage_record(path: Path) -> list[str]:
    """Five records: 0, 2, 3, 4 molecules with a measured ``logS``; 1 three garbage lines."""
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "ClC(Cl)Cl"]
    blocks = []
    for i, smi in enumerate(smiles):
        mol = Chem.MolFromSmiles(smi)
        mol.SetProp("_Name", f"m{i}")
        blocks.append(Chem.MolToMolBlock(mol) + f"> <logS>\n-{i}.25\n\n$$$$\n")
    path.write_text(blocks[0] + "garbage\nmore garbage\nthe end\n$$$$\n" + "".join(blocks[1:]))
    return smiles


def test_an_sdf_with_a_garbage_record_gives_one_row_per_record(tmp_path, solubility):
    src = tmp_path / "five.sdf"
    smiles = _sdf_with_a_garbage_record(src)
    out = _predict(src, tmp_path / "out.csv", "--chunk-size", "2")
    assert len(out) == 5
    assert out["name"].tolist() == ["m0", "", "m1", "m2", "m3"]
    assert out["logS"].tolist() == ["-0.25", "", "-1.25", "-2.25", "-3.25"]  # kept
    assert out["status"].tolist() == ["ok", "invalid_input", "ok", "ok", "ok"]
    assert "SDF record 1" in out["error"][1] and "garbage" in out["error"][1]
    expected = solubility.predict(smiles)
    got = out.loc[out["status"] == "ok", "pred_logS"].astype(float)
    np.testing.assert_allclose(got, expected["logS"], rtol=1e-5)
