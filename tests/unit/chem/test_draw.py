"""RDKit 2D drawings of SMILES (``molprop.chem.draw``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from molprop.chem.draw import molecule_svg
from molprop.errors import InvalidInputError

SVG = "{http://www.w3.org/2000/svg}"


def test_drawing_is_svg_of_the_requested_size_with_one_path_per_bond_part() -> None:
    root = ET.fromstring(molecule_svg("c1ccccc1O", size=(300, 200)))
    assert root.tag == f"{SVG}svg"
    assert (root.get("width"), root.get("height")) == ("300px", "200px")
    # RDKit draws bonds as paths with class bond-<index>: phenol has 7 bonds
    bonds = {
        cls.split()[0]
        for p in root.iter(f"{SVG}path")
        if (cls := p.get("class") or "").startswith("bond-")
    }
    assert bonds == {f"bond-{i}" for i in range(7)}


def test_drawing_has_no_script_and_no_text_of_the_caller() -> None:
    svg = molecule_svg("OCC")
    assert "<script" not in svg and "OCC" not in svg


@pytest.mark.parametrize("bad", ["C1CC", "<script>alert(1)</script>", "", "c1ccccc1 O"])
def test_bad_smiles_raise_invalid_input(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        molecule_svg(bad)


def test_length_limit_is_the_parsers() -> None:
    with pytest.raises(InvalidInputError, match="too long"):
        molecule_svg("C" * 30, max_length=20)


def test_heavy_atom_limit_bounds_the_drawing() -> None:
    assert molecule_svg("C" * 20, max_heavy_atoms=20)
    with pytest.raises(InvalidInputError, match="21 heavy atoms"):
        molecule_svg("C" * 21, max_heavy_atoms=20)
