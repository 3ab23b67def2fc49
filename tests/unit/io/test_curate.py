"""The curation rules on a tiny hand-made table: standardise, merge, drop, record why."""

from __future__ import annotations

import pandas as pd
import pytest

from molprop.errors import InvalidInputError
from molprop.io.curate import REMOVED_COLUMNS, CurationRule, curate, standardise


def test_standardise_strips_salt_neutralises_and_keys_by_inchikey() -> None:
    acid, key = standardise("CC(=O)O")
    salt, salt_key = standardise("CC(=O)[O-].[Na+]")
    assert salt == acid == "CC(=O)O"
    assert salt_key == key == "QTBSBXVTEAMEQO-UHFFFAOYSA-N"
    with pytest.raises(InvalidInputError, match="wildcard"):
        standardise("*CCO")
    with pytest.raises(InvalidInputError):
        standardise("C1CC")


def test_regression_duplicates_within_tolerance_are_averaged_else_dropped() -> None:
    smiles = pd.Series(
        ["CCO", "OCC", "c1ccccc1", "C1=CC=CC=C1", "CC(=O)O", "CC(=O)[O-].[Na+]", "bad(", "CCN"]
    )
    labels = pd.Series([1.0, 1.4, 0.0, 2.0, -1.0, -1.0, 3.0, float("nan")])
    got = curate(smiles, labels, "logS", CurationRule("regression", tolerance=0.5))
    table = got.table.set_index("smiles")
    # ethanol: spread 0.4 <= 0.5 -> mean; acetate salt collapses onto acetic acid
    assert table.loc["CCO", "logS"] == pytest.approx(1.2)
    assert table.loc["CCO", "n_measurements"] == 2
    assert table.loc["CC(=O)O", "logS"] == pytest.approx(-1.0)
    # benzene: spread 2.0 > 0.5 -> both rows dropped
    assert "c1ccccc1" not in table.index
    assert list(got.table.columns) == ["smiles", "inchikey", "logS", "n_measurements"]
    assert got.table["inchikey"].is_unique
    # every input row is either the kept representative or recorded with a reason
    assert list(got.removed.columns) == REMOVED_COLUMNS
    assert len(got.table) + len(got.removed) == got.n_in == len(smiles)
    reasons = dict(zip(got.removed["row"], got.removed["reason"], strict=True))
    assert reasons[1].startswith("duplicate of row 0 merged (mean of 2)")
    assert "conflicting duplicate: spread 2 > tolerance 0.5" in reasons[2]
    assert "conflicting duplicate" in reasons[3]
    assert reasons[5].startswith("duplicate of row 4")
    assert reasons[6].startswith("invalid SMILES")
    assert reasons[7] == "missing label"


def test_classification_disagreement_drops_the_molecule_and_bad_labels_are_recorded() -> None:
    smiles = pd.Series(["CCO", "OCC", "CCN", "NCC", "CCC", "CCCl"])
    labels = pd.Series([1, 0, 1, 1, 2, 0])
    got = curate(smiles, labels, "active", CurationRule("classification"))
    assert got.table["smiles"].tolist() == ["CCN", "CCCl"]
    assert got.table["active"].tolist() == [1, 0]
    reasons = dict(zip(got.removed["row"], got.removed["reason"], strict=True))
    assert reasons[0].startswith("conflicting duplicate: labels disagree")
    assert reasons[1].startswith("conflicting duplicate: labels disagree")
    assert reasons[3] == "duplicate of row 2 (same label)"
    assert reasons[4] == "classification label 2 is not 0 or 1"


def test_labels_outside_the_plausible_range_are_removed() -> None:
    got = curate(
        pd.Series(["CCO", "CCN"]),
        pd.Series([50.0, 101.0]),
        "ppb_percent",
        CurationRule("regression", tolerance=10.0, low=0.0, high=100.0),
    )
    assert got.table["smiles"].tolist() == ["CCO"]
    assert got.removed["reason"].tolist() == ["label 101 outside the plausible range [0, 100]"]


def test_a_shared_cache_gives_the_same_tables() -> None:
    smiles = pd.Series(["CCO", "OCC", "C1CC", "CCN"])
    labels = pd.Series([1.0, 1.2, 0.0, 2.0])
    rule = CurationRule("regression", tolerance=0.5)
    cache: dict[str, tuple[str, str] | str] = {}
    first = curate(smiles, labels, "y", rule, cache)
    assert set(cache) == {"CCO", "OCC", "C1CC", "CCN"}
    assert isinstance(cache["C1CC"], str) and cache["C1CC"].startswith("invalid SMILES")
    again = curate(smiles, labels, "y", rule, cache)
    plain = curate(smiles, labels, "y", rule)
    pd.testing.assert_frame_equal(first.table, again.table)
    pd.testing.assert_frame_equal(first.table, plain.table)
    pd.testing.assert_frame_equal(first.removed, plain.removed)
