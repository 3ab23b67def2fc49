from __future__ import annotations

import pytest

from molprop.chem import canonical_smiles, inchikey, parse_smiles
from molprop.errors import InvalidInputError


def test_parse_valid_and_canonical():
    assert parse_smiles("OCC").GetNumAtoms() == 3
    assert canonical_smiles("OCC") == canonical_smiles("CCO")


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "missing"),
        (float("nan"), "missing"),
        (12, "string"),
        ("C1CC", "RDKit"),
        ("c1ccccc", "RDKit"),
        ("C(C)(C)(C)(C)C", "valence"),
        ("X" * 2000, "too long"),
    ],
)
def test_invalid_inputs_raise_with_reason(bad, reason):
    with pytest.raises(InvalidInputError) as err:
        parse_smiles(bad)
    assert reason.lower() in str(err.value).lower()


def test_inchikey_identifies_same_molecule_written_differently():
    assert inchikey("OCC") == inchikey("C(O)C")
    assert inchikey("OCC") != inchikey("COC")


def test_standardize_strips_counterion():
    mol = parse_smiles("CC(=O)[O-].[Na+]", standardize=True)
    assert mol.GetNumAtoms() == 4


@pytest.mark.parametrize("bad", ["c1ccccc1 O", "CC\nO", "CC\tO", "CC\r\nO", "C C", "CCO \u00a0C"])
def test_whitespace_inside_smiles_is_invalid_not_truncated(bad):
    """RDKit reads up to the first whitespace and takes the rest as a name: "c1ccccc1 O" would
    come back as benzene. Inside a SMILES it is invalid input, with the reason."""
    with pytest.raises(InvalidInputError, match="whitespace") as err:
        parse_smiles(bad)
    assert "character" in str(err.value)


@pytest.mark.parametrize("padded", ["  CCO", "CCO\n", "\tCCO\r\n", " CCO "])
def test_leading_and_trailing_whitespace_is_stripped(padded):
    assert canonical_smiles(padded) == canonical_smiles("CCO")
