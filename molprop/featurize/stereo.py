"""Stereo labels that do not depend on how a molecule is written.

RDKit's chiral tags (CW/CCW) and a bond's STEREOCIS/STEREOTRANS are *relative to the order* in
which the atoms' neighbours are listed, so the same molecule written in another atom order would
get other features. Features therefore use CIP descriptors (R/S, pseudo-asymmetric r/s, E/Z)
from RDKit's new CIP labeller, which depend only on the molecular graph:

- atom: ``none`` (no stereo tag), ``R``, ``S``, ``r``, ``s``, or ``unlabelled`` (a stereo tag
  the CIP rules give no descriptor for, e.g. a ring cis/trans centre the labeller leaves out);
- bond: ``none``, ``any`` (explicitly unknown), ``E``, ``Z``, or ``unlabelled``.

The labeller runs only for molecules that carry stereo, with a cap on its work
(:data:`MAX_CIP_ITERATIONS`); if it gives up, RDKit's legacy CIP codes (also graph-only) are used.
"""

from __future__ import annotations

from rdkit import Chem
from rdkit.Chem import rdCIPLabeler

#: atom stereo classes, in feature-slot order (anything else -> the "other" slot)
ATOM_STEREO: tuple[str, ...] = ("none", "R", "S", "r", "s", "unlabelled")
#: bond stereo classes, in feature-slot order
BOND_STEREO: tuple[str, ...] = ("none", "any", "E", "Z", "unlabelled")
#: work cap for the CIP labeller (pathological molecules: legacy codes instead)
MAX_CIP_ITERATIONS = 1_000_000

_CIP = "_CIPCode"
_DONE = "_molpropCIP"
_UNSPECIFIED = Chem.ChiralType.CHI_UNSPECIFIED
_NONE, _ANY = Chem.BondStereo.STEREONONE, Chem.BondStereo.STEREOANY


def has_stereo(mol: Chem.Mol) -> bool:
    return any(a.GetChiralTag() != _UNSPECIFIED for a in mol.GetAtoms()) or any(
        b.GetStereo() not in (_NONE, _ANY) for b in mol.GetBonds()
    )


def assign_cip_labels(mol: Chem.Mol, *, stereo: bool | None = None) -> Chem.Mol:
    """Give ``mol``'s stereo atoms and bonds their CIP codes (in place, once per molecule).
    ``stereo``: whether the molecule carries stereo, when the caller already knows (True: it
    does; None: :func:`has_stereo` looks, a Python pass over every atom and bond)."""
    if mol.HasProp(_DONE):
        return mol
    if stereo if stereo is not None else has_stereo(mol):
        try:
            rdCIPLabeler.AssignCIPLabels(mol, maxRecursiveIterations=MAX_CIP_ITERATIONS)
        except RuntimeError:  # work cap reached: legacy CIP ranks (graph invariants too)
            for obj in (*mol.GetAtoms(), *mol.GetBonds()):
                obj.ClearProp(_CIP)
            Chem.AssignStereochemistry(mol, cleanIt=True, force=True)
    mol.SetBoolProp(_DONE, True, computed=True)
    return mol


def atom_stereo_classes(atoms: list[Chem.Atom], mol: Chem.Mol) -> list[str]:
    """:func:`atom_stereo` of every atom of ``mol`` (``atoms``, in index order), labelling the
    molecule only when an atom has a stereo tag: the feature matrices read the tags in their
    own pass over the atoms instead of :func:`has_stereo`'s (about as slow as parsing)."""
    if all(a.GetChiralTag() == _UNSPECIFIED for a in atoms):
        return ["none"] * len(atoms)
    assign_cip_labels(mol, stereo=True)
    return [atom_stereo(a) for a in atoms]


def bond_stereo_classes(bonds: list[Chem.Bond], mol: Chem.Mol) -> list[str]:
    """:func:`bond_stereo` of every bond (``bonds``, in index order), labelling the molecule
    only when a bond has a stereo tag other than "any" (see :func:`atom_stereo_classes`)."""
    tags = [b.GetStereo() for b in bonds]
    if all(t in (_NONE, _ANY) for t in tags):
        return ["none" if t == _NONE else "any" for t in tags]
    assign_cip_labels(mol, stereo=True)
    return [bond_stereo(b) for b in bonds]


def atom_stereo(atom: Chem.Atom) -> str:
    """Order-independent stereo class of ``atom`` (its molecule must be labelled)."""
    if atom.GetChiralTag() == _UNSPECIFIED:
        return "none"
    code = atom.GetProp(_CIP) if atom.HasProp(_CIP) else ""
    return code if code in ("R", "S", "r", "s") else "unlabelled"


def bond_stereo(bond: Chem.Bond) -> str:
    """Order-independent stereo class of ``bond`` (its molecule must be labelled)."""
    stereo = bond.GetStereo()
    if stereo == _NONE:
        return "none"
    if stereo == _ANY:
        return "any"
    code = bond.GetProp(_CIP) if bond.HasProp(_CIP) else ""
    return code if code in ("E", "Z") else "unlabelled"
