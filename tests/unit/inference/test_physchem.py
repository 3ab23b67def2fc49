"""Physicochemical properties, drug-likeness rules and structural alerts: checked against
hand-counted values of known drugs, invariant to how the SMILES is written, one row per input."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from rdkit import Chem

from molprop.inference.physchem import COLUMNS, PROPERTIES, describe_smiles, physchem_frame

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
# atorvastatin: MW 558.6 and Crippen cLogP 6.3 (2 Lipinski violations: fails), 2 stereocentres
ATORVASTATIN = "CC(C)c1c(C(=O)Nc2ccccc2)c(-c2ccccc2)c(-c2ccc(F)cc2)n1CC[C@@H](O)C[C@@H](O)CC(=O)O"


def test_aspirin_by_hand() -> None:
    row = describe_smiles(ASPIRIN)
    assert row["status"] == "ok"
    assert row["molecular_weight"] == pytest.approx(180.159, abs=1e-3)
    assert (row["hbd"], row["hba"], row["heavy_atoms"], row["rings"]) == (1, 3, 13, 1)
    assert row["tpsa"] == pytest.approx(63.6, abs=0.01)
    assert row["stereocentres"] == 0 and row["lipinski_pass"] and row["veber_pass"]
    assert row["brenk_alerts"] == "phenol_ester" and row["n_alerts"] == 1


def test_rules_and_stereocentres_of_a_large_drug() -> None:
    row = describe_smiles(ATORVASTATIN)
    assert row["molecular_weight"] == pytest.approx(558.65, abs=0.05)
    assert row["clogp"] > 5 and row["hbd"] == 4 and row["hba"] <= 10
    assert row["lipinski_violations"] == 2 and not row["lipinski_pass"]  # MW and cLogP
    one = describe_smiles("CCCCCCCCCCCCCCCCCCCCCCC(=O)O")  # cLogP > 5 only: passes
    assert one["lipinski_violations"] == 1 and one["lipinski_pass"]
    assert row["stereocentres"] == 2 and row["unassigned_stereocentres"] == 0
    unassigned = describe_smiles(ATORVASTATIN.replace("@@", ""))
    assert unassigned["stereocentres"] == 2 and unassigned["unassigned_stereocentres"] == 2
    # Veber: more than 10 rotatable bonds fails
    chain = describe_smiles("CCCCCCCCCCCCCCCC(=O)O")
    assert chain["rotatable_bonds"] == 14 and not chain["veber_pass"]
    assert describe_smiles("CCCCCCCCCCC(=O)O")["veber_pass"]  # 9 rotatable bonds


def test_alerts_pains_brenk_nih() -> None:
    azo = describe_smiles("Oc1ccccc1N=Nc1ccccc1")
    assert "azo_A(324)" in azo["pains_alerts"]
    assert "azo_aryl" in azo["nih_alerts"]
    assert azo["n_alerts"] == sum(
        len([a for a in str(azo[f"{k}_alerts"]).split("; ") if a])
        for k in ("pains", "brenk", "nih")
    )
    metal = describe_smiles("N.N.Cl[Pt]Cl")  # refused by the models, described as written
    assert metal["status"] == "ok" and "contains_metal" in metal["nih_alerts"]


def test_salt_is_described_as_the_parent_the_models_read() -> None:
    salt, acid = describe_smiles("[Na+].[O-]C(=O)c1ccccc1"), describe_smiles("OC(=O)c1ccccc1")
    assert salt["described_smiles"] == "O=C(O)c1ccccc1"
    assert {k: salt[k] for k in PROPERTIES} == {k: acid[k] for k in PROPERTIES}


def test_same_molecule_same_row_however_written() -> None:
    mol = Chem.MolFromSmiles(ATORVASTATIN)
    rng = random.Random(0)
    base = {k: v for k, v in describe_smiles(ATORVASTATIN).items() if k != "described_smiles"}
    for _ in range(5):
        order = list(range(mol.GetNumAtoms()))
        rng.shuffle(order)
        text = Chem.MolToSmiles(Chem.RenumberAtoms(mol, order), canonical=False, kekuleSmiles=True)
        row = {k: v for k, v in describe_smiles(text).items() if k != "described_smiles"}
        assert row == base, text


def test_frame_has_one_row_per_input_with_per_row_errors() -> None:
    frame = physchem_frame([ASPIRIN, "C1CC", "", ASPIRIN])
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 4
    assert frame["status"].tolist() == ["ok", "invalid_input", "invalid_input", "ok"]
    assert frame["error"][1] and frame["error"][2] and not frame["error"][0]
    assert frame["molecular_weight"][1:3].isna().all()
    assert frame["lipinski_pass"].dtype == "boolean" and frame["lipinski_pass"][1] is pd.NA
    assert frame.iloc[0].equals(frame.iloc[3])
