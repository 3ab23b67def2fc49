"""Fidelity splits on real QM8 data: inductive leak check (duplicates written differently),
transductive coverage, shared high-fidelity partition; G4MP2 table derivation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from molprop.chem.smiles import canonical_smiles, inchikey
from molprop.errors import DataError
from molprop.transfer.datasets import HARTREE_EV, g4mp2_ip_frame, qm8_e1_frame, xyz_to_smiles
from molprop.transfer.fidelity_split import build_fidelity_split, check_split


@pytest.fixture(scope="module")
def qm8_with_duplicates() -> pd.DataFrame:
    """300 real QM8 molecules plus about 60 of them again, written as canonical SMILES (the
    file uses explicit-H SMILES; duplicates whose strings would coincide are dropped)."""
    frame = qm8_e1_frame().iloc[:300].reset_index(drop=True)
    dup = frame.iloc[::5].copy()
    dup["smiles"] = [canonical_smiles(s) for s in dup["smiles"]]
    dup = dup[~dup["smiles"].isin(frame["smiles"])]
    assert len(dup) > 40
    return pd.concat([frame, dup], ignore_index=True)


def test_inductive_split_catches_duplicates_written_differently(qm8_with_duplicates, tmp_path):
    split = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [100, 30, 60], "inductive", seed=3
    )
    split.write(tmp_path)
    pretrain = pd.read_csv(tmp_path / "pretrain.csv")
    held = pd.concat([pd.read_csv(tmp_path / "val.csv"), pd.read_csv(tmp_path / "test.csv")])
    held_keys = {inchikey(s) for s in held["smiles"]}  # recomputed, independent of the file
    assert not held_keys & {inchikey(s) for s in pretrain["smiles"]}
    # duplicates of held-out molecules existed and were removed in both spellings
    keys = pd.Series([inchikey(s) for s in held["smiles"]])
    assert (keys.value_counts() > 1).any()
    assert "e1_pbe0" not in held.columns  # inductive val/test carry no low labels
    assert len(set(pd.read_csv(tmp_path / "train.csv")["inchikey"])) == 100


def test_leak_check_raises_when_a_test_molecule_is_pretrained(qm8_with_duplicates):
    split = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [100, 30, 60], "inductive", seed=0
    )
    leaked = split.test.iloc[:1][["smiles", "inchikey"]].assign(e1_pbe0=1.0)
    split.pretrain = pd.concat([split.pretrain, leaked], ignore_index=True)
    with pytest.raises(DataError, match="inductive leak"):
        check_split(split, "inductive")


def test_transductive_split_covers_every_molecule(qm8_with_duplicates):
    split = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [100, 30, 60], "transductive", seed=0
    )
    pre = set(split.pretrain["inchikey"])
    for part in (split.train, split.val, split.test):
        assert set(part["inchikey"]) <= pre
        assert np.isfinite(part["e1_pbe0"]).all()
    assert len(split.pretrain) == len(qm8_with_duplicates)
    assert (split.test.groupby("inchikey")["smiles"].nunique() > 1).any()  # both spellings kept
    split.pretrain = split.pretrain[split.pretrain["inchikey"] != split.test["inchikey"].iloc[0]]
    with pytest.raises(DataError, match="coverage"):
        check_split(split, "transductive")


def test_modes_share_the_high_fidelity_partition(qm8_with_duplicates):
    a = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [50, 10, 20], "transductive", seed=1
    )
    b = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [50, 10, 20], "inductive", seed=1
    )
    for part in ("train", "val", "test"):
        assert set(getattr(a, part)["inchikey"]) == set(getattr(b, part)["inchikey"])
    c = build_fidelity_split(
        qm8_with_duplicates, "smiles", "e1_pbe0", "e1_cc2", [50, 10, 20], "inductive", seed=2
    )
    assert set(c.test["inchikey"]) != set(b.test["inchikey"])


def test_g4mp2_smiles_and_ionisation_potential(data_dir):
    raw = pd.read_csv(data_dir / "multifidelity" / "g4mp2_ip_3405.csv.gz", nrows=40)
    assert xyz_to_smiles(raw["xyz"].iloc[0]) == "C"  # dsgdb9nsd_000001 is methane
    frame, issues = g4mp2_ip_frame(data_dir / "multifidelity" / "g4mp2_ip_3405.csv.gz")
    assert len(frame) + len(issues) == 3405 and len(issues) < 20
    row = frame.set_index("id").loc[raw["filename"].iloc[7]]
    expected = (raw["u0_oxidized_g4mp2"].iloc[7] - raw["u0_g4mp2"].iloc[7]) * HARTREE_EV
    assert row["ip_g4mp2"] == pytest.approx(expected)
    assert 5.0 < frame["ip_g4mp2"].median() < 12.0  # eV, not Hartree
