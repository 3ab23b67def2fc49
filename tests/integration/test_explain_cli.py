"""``molprop explain`` on a shipped model: CSV of per-atom weights, per-row status, pictures."""

from __future__ import annotations

import pandas as pd
from rdkit import Chem

from molprop.cli.main import main

SMILES = ["CC(=O)Oc1ccccc1C(=O)O", "C1CC", "c1ccccc1O", "[Na+].[Cl-]"]


def test_explain_cli_writes_weights_status_and_pictures(tmp_path, capsys) -> None:
    out = tmp_path / "explained"
    code = main(["explain", "--model", "solubility", "--smiles", *SMILES, "--out", str(out)])
    assert code == 0
    assert "4 molecules explained" in capsys.readouterr().out
    molecules = pd.read_csv(out / "molecules.csv", keep_default_na=False)
    assert molecules["status"].tolist() == ["ok", "invalid_input", "ok", "unsupported"]
    assert molecules["error"][1] and not molecules["error"][0] and molecules["error"][3]
    atoms = pd.read_csv(out / "atoms.csv")
    assert list(atoms.columns) == ["molecule", "smiles", "atom_index", "element", "weight"]
    for k in (0, 2):
        mol = Chem.MolFromSmiles(SMILES[k])
        rows = atoms[atoms["molecule"] == k]
        assert rows["atom_index"].tolist() == list(range(mol.GetNumAtoms()))
        assert rows["element"].tolist() == [a.GetSymbol() for a in mol.GetAtoms()]
        assert (rows["smiles"] == SMILES[k]).all()
        ok = molecules.iloc[k]
        diff = float(ok["prediction"]) - float(ok["baseline"])
        assert abs(rows["weight"].sum() - diff) <= 0.01 * abs(diff)  # completeness
        assert (out / f"mol_{k}.svg").read_text().rstrip().endswith("</svg>")
        assert (out / f"mol_{k}.png").read_bytes()[:4] == b"\x89PNG"
    for k in (1, 3):  # no explanation of a row without a prediction
        assert k not in atoms["molecule"].tolist()
        assert not (out / f"mol_{k}.svg").exists() and not (out / f"mol_{k}.png").exists()


def test_explain_cli_reads_a_csv_column(tmp_path) -> None:
    table = tmp_path / "in.csv"
    pd.DataFrame({"name": ["aspirin", "bad"], "smi": [SMILES[0], "C1CC"]}).to_csv(table)
    out = tmp_path / "out"
    code = main(
        [
            "explain",
            "--model",
            "bbb_penetration",
            "--input",
            str(table),
            "--smiles-column",
            "smi",
            "--out",
            str(out),
            "--no-pictures",
        ]
    )
    assert code == 0
    molecules = pd.read_csv(out / "molecules.csv")
    assert molecules["status"].tolist() == ["ok", "invalid_input"]
    assert molecules["space"][0] == "logit"  # a classifier's logit is explained
    assert not list(out.glob("*.svg"))
    assert main(["explain", "--model", "solubility", "--input", str(table), "--out", str(out)]) == 2
