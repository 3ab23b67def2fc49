"""The chemistry checks before the model (molprop.chem.standardize): largest organic fragment,
neutralised; inorganic input, metals and unknown elements refused with the reason."""

from __future__ import annotations

import pickle

import pytest
from rdkit import Chem

from molprop.chem.smiles import parse_smiles
from molprop.chem.standardize import ORGANIC_ELEMENTS, standardize
from molprop.errors import InvalidInputError, UnsupportedMoleculeError

#: palladium(II) porphine, Pd bonded to two pyrrole nitrogens, and the same written as ions
PD_PORPHYRIN = "c1cc2cc3ccc4n3[Pd]n5c(cc1n2)ccc5cc1ccc(c4)n1"
PD_PORPHYRIN_IONIC = "C1=CC2=CC3=CC=C([N-]3)C=C4C=CC(=N4)C=C5C=CC(=N5)C=C1[N-]2.[Pd+2]"


def std(smiles: str, elements=None):
    return standardize(parse_smiles(smiles), elements)


@pytest.mark.parametrize(
    ("smiles", "expected"),
    [
        ("[Na+].[O-]C(=O)c1ccccc1", "O=C(O)c1ccccc1"),  # sodium benzoate -> benzoic acid
        ("O=C(O[Na])c1ccccc1", "O=C(O)c1ccccc1"),  # the same salt written with a bond
        ("O=C([O-])c1ccccc1.O=C([O-])c1ccccc1.[Ca+2]", "O=C(O)c1ccccc1"),
        ("CCN(CC)CC.Cl", "CCN(CC)CC"),  # hydrochloride
        ("CCO.O", "CCO"),  # hydrate
        ("[NH3+]CC([O-])=O", "NCC(=O)O"),  # zwitterion neutralised
        ("C[N+](C)(C)C.[Cl-]", "C[N+](C)(C)C"),  # a quaternary ammonium keeps its charge
    ],
)
def test_salts_become_their_neutral_largest_organic_fragment(smiles, expected):
    result = std(smiles)
    assert result.changed and result.smiles == expected


@pytest.mark.parametrize("smiles", ["CCO", "c1ccccc1O", "[O-][n+]1ccccc1", "C[N+](=O)[O-]"])
def test_molecules_with_nothing_to_do_are_unchanged(smiles):
    mol = parse_smiles(smiles)
    result = standardize(mol)
    assert not result.changed and result.mol is mol


def test_the_input_molecule_is_not_modified():
    mol = parse_smiles("[Na+].[O-]C(=O)c1ccccc1")
    std_smiles = std("[Na+].[O-]C(=O)c1ccccc1").smiles
    standardize(mol)
    assert Chem.MolToSmiles(mol) == "O=C([O-])c1ccccc1.[Na+]" != std_smiles


@pytest.mark.parametrize("smiles", ["[Na+].[Cl-]", "O", "N.N.Cl[Pt]Cl", "[Cu+2].[O-]S([O-])(=O)=O"])
def test_inorganic_input_is_unsupported(smiles):
    with pytest.raises(UnsupportedMoleculeError, match="inorganic: no carbon-containing"):
        std(smiles)


@pytest.mark.parametrize(
    ("smiles", "metal"),
    [
        (PD_PORPHYRIN, "Pd"),
        (PD_PORPHYRIN_IONIC, "Pd"),  # the metal is not dropped as a counter-ion
        ("[CH-]1C=CC=C1.[CH-]1C=CC=C1.[Fe+2]", "Fe"),  # ferrocene
        ("CCC1=[O+][Cu-3]2([O+]=C(CC)C1)[O+]=C(CC)CC(CC)=[O+]2", "Cu"),
    ],
)
def test_metals_are_unsupported_and_named(smiles, metal):
    with pytest.raises(UnsupportedMoleculeError, match=f"contains the metal {metal}:"):
        std(smiles)


def test_elements_outside_the_training_set_are_unsupported_and_named():
    with pytest.raises(UnsupportedMoleculeError, match="contains Se: .*organic subset") as info:
        std("CC[Se]CC")
    assert info.value.smiles == "CC[Se]CC"
    assert not std("CC[Se]CC", ORGANIC_ELEMENTS | {"Se"}).changed  # a model trained on Se
    with pytest.raises(UnsupportedMoleculeError, match="contains Br: .*training set: H, C, O"):
        std("CCBr", {"C", "H", "O"})


def test_unsupported_is_invalid_input_that_survives_a_process_boundary():
    exc = UnsupportedMoleculeError("contains Se", smiles="CC[Se]CC")
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, InvalidInputError)
    assert (str(back), back.smiles) == ("contains Se", "CC[Se]CC")
