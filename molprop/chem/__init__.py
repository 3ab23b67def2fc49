"""Parsing and standardisation of chemical inputs."""

from molprop.chem.draw import molecule_svg
from molprop.chem.smiles import canonical_smiles, inchikey, parse_smiles

__all__ = ["parse_smiles", "canonical_smiles", "inchikey", "molecule_svg"]
