"""Bonds from 3D coordinates: RDKit ``rdDetermineBonds`` (connectivity + bond orders).

Inputs without bonds (xyz / extxyz frames, ASE or pymatgen molecules) get an RDKit molecule
with bonds, formal charges and stereo from the geometry, so the 3D featuriser can compute the
same atom and bond features as the 2D one. Perception is *where possible*:

* periodic systems are not perceived (``rdDetermineBonds`` knows no cells);
* molecules with more than ``max_atoms`` atoms (hydrogens included; default
  :data:`DEFAULT_MAX_ATOMS`) are not tried: bond-order assignment grows steeply with size and
  cannot be interrupted once started, so the size cap is the time limit;
* RDKit may fail to find bond orders (radicals, unusual charges, a wrong total charge).
  Connectivity comes from covalent radii first; if no bond orders fit (strained cages of QM9:
  4% of the first 1,000 molecules), extended-Hueckel connectivity is tried (all 1,000 then
  succeed; RDKit prints its distance warnings for those molecules).

A failure is a :class:`BondPerceptionError` whose message says why; the featuriser then falls
back to a radius graph and logs the reason for that row.
"""

from __future__ import annotations

import numpy as np
from rdkit import Chem
from rdkit.Chem import rdDetermineBonds
from rdkit.Geometry import Point3D

from molprop.errors import InvalidInputError

#: Molecules with more atoms than this (H included) are not perceived (radius graph instead).
DEFAULT_MAX_ATOMS = 200

#: Atom property holding each atom's index in the input structure (survives ``RemoveHs``).
SOURCE_INDEX = "molprop_source_index"


class BondPerceptionError(InvalidInputError):
    """Bonds could not be perceived from the coordinates (the message says why)."""


def atoms_mol(numbers: np.ndarray, pos: np.ndarray) -> Chem.RWMol:
    """A molecule of bare atoms (no bonds, no implicit hydrogens) with one 3D conformer; each
    atom records its input index in the :data:`SOURCE_INDEX` property."""
    mol = Chem.RWMol()
    for i, z in enumerate(numbers):
        atom = Chem.Atom(int(z))
        atom.SetNoImplicit(True)
        atom.SetIntProp(SOURCE_INDEX, i)
        mol.AddAtom(atom)
    conf = Chem.Conformer(len(numbers))
    for i, p in enumerate(np.asarray(pos, dtype=np.float64)):
        conf.SetAtomPosition(i, Point3D(*map(float, p)))
    conf.Set3D(True)
    mol.AddConformer(conf, assignId=True)
    return mol


def perceive_bonds(
    numbers: np.ndarray, pos: np.ndarray, charge: int = 0, max_atoms: int = DEFAULT_MAX_ATOMS
) -> Chem.Mol:
    """Atomic numbers (n,) + positions (n, 3) Å -> sanitised RDKit molecule with explicit
    hydrogens, bonds, bond orders, formal charges and stereo from 3D, atoms in input order.

    Raises :class:`BondPerceptionError` (with the reason) when the molecule is over
    ``max_atoms`` atoms or RDKit finds no valid bond orders for total ``charge``."""
    n = int(len(numbers))
    if n > max_atoms:
        raise BondPerceptionError(
            f"{n} atoms, more than the {max_atoms} allowed for bond perception"
        )
    reason = ""
    for hueckel in (False, True):  # van der Waals connectivity first; extended Hueckel if it fails
        mol = atoms_mol(numbers, pos)
        try:
            rdDetermineBonds.DetermineBonds(mol, charge=int(charge), useHueckel=hueckel)
            Chem.SanitizeMol(mol)
            Chem.AssignStereochemistryFrom3D(mol)
            return mol.GetMol()
        except (ValueError, RuntimeError, Chem.rdchem.MolSanitizeException) as exc:
            text = str(exc).strip()
            reason = text.splitlines()[0] if text else type(exc).__name__
    raise BondPerceptionError(f"RDKit could not assign bonds: {reason}")


def bare_atoms(numbers: np.ndarray, pos: np.ndarray) -> Chem.Mol:
    """:func:`atoms_mol` with RDKit's atom properties computed (for atom features of a
    structure whose bonds are unknown: every atom then has degree 0 and no hydrogens)."""
    mol = atoms_mol(numbers, pos)
    mol.UpdatePropertyCache(strict=False)
    Chem.FastFindRings(mol)
    return mol.GetMol()


def perceived_smiles(mol: Chem.Mol) -> str | None:
    """Canonical SMILES (hydrogens implicit) of a molecule from :func:`perceive_bonds`, or None
    when RDKit cannot write it."""
    try:
        return Chem.MolToSmiles(Chem.RemoveHs(mol))
    except (ValueError, RuntimeError, Chem.rdchem.MolSanitizeException):
        return None
