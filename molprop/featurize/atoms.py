"""RDKit atom features.

Each categorical feature is one-hot over a documented list **plus a separate "other" bucket**:
an element (or degree, charge, ...) that is not in the list never aliases onto a real value.
"""

from __future__ import annotations

import numpy as np
from rdkit import Chem

from molprop.featurize.stereo import (
    ATOM_STEREO,
    assign_cip_labels,
    atom_stereo,
    atom_stereo_classes,
)

#: Elements with their own one-hot slot (anything else goes to the "other" slot).
ELEMENTS: tuple[str, ...] = (
    "H",
    "B",
    "C",
    "N",
    "O",
    "F",
    "Si",
    "P",
    "S",
    "Cl",
    "Br",
    "I",
    "Li",
    "Na",
    "K",
    "Mg",
    "Ca",
    "Al",
    "Fe",
    "Co",
    "Ni",
    "Cu",
    "Zn",
    "Se",
    "Sn",
    "As",
    "Pt",
    "Hg",
)
DEGREES: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
FORMAL_CHARGES: tuple[int, ...] = (-2, -1, 0, 1, 2)
NUM_HS: tuple[int, ...] = (0, 1, 2, 3, 4)
HYBRIDIZATIONS: tuple[Chem.HybridizationType, ...] = (
    Chem.HybridizationType.S,
    Chem.HybridizationType.SP,
    Chem.HybridizationType.SP2,
    Chem.HybridizationType.SP3,
    Chem.HybridizationType.SP3D,
    Chem.HybridizationType.SP3D2,
)
RING_SIZES: tuple[int, ...] = (3, 4, 5, 6, 7, 8)


def one_hot(value: object, choices: tuple) -> list[float]:
    """One-hot of ``value`` over ``choices`` plus a final "other" slot."""
    out = [0.0] * (len(choices) + 1)
    try:
        out[choices.index(value)] = 1.0
    except ValueError:
        out[-1] = 1.0
    return out


def atom_feature_dim() -> int:
    """Length of the vector returned by :func:`atom_features`."""
    return (
        len(ELEMENTS)
        + 1
        + len(DEGREES)
        + 1
        + len(FORMAL_CHARGES)
        + 1
        + len(ATOM_STEREO)
        + 1
        + len(NUM_HS)
        + 1
        + len(HYBRIDIZATIONS)
        + 1
        + 2
        + len(RING_SIZES)
        + 1
    )


def atom_features(atom: Chem.Atom) -> list[float]:
    """Feature vector of one atom.

    Layout: element | degree | formal charge | stereo (CIP class, see
    :mod:`molprop.featurize.stereo`) | total H count | hybridisation (each one-hot + other) |
    aromatic | in ring | ring sizes 3..8 | mass / 100.
    """
    assign_cip_labels(atom.GetOwningMol())
    return (
        one_hot(atom.GetSymbol(), ELEMENTS)
        + one_hot(atom.GetTotalDegree(), DEGREES)
        + one_hot(atom.GetFormalCharge(), FORMAL_CHARGES)
        + one_hot(atom_stereo(atom), ATOM_STEREO)
        + one_hot(atom.GetTotalNumHs(), NUM_HS)
        + one_hot(atom.GetHybridization(), HYBRIDIZATIONS)
        + [float(atom.GetIsAromatic()), float(atom.IsInRing())]
        + [float(atom.IsInRingSize(size)) for size in RING_SIZES]
        + [atom.GetMass() / 100.0]
    )


def _slots(choices: tuple) -> dict:
    return {c: i for i, c in enumerate(choices)}


_PT = Chem.GetPeriodicTable()
#: (value -> slot lookup, block width incl. "other") per one-hot block, in the layout order above
_CATEGORIES = (
    ({_PT.GetAtomicNumber(e): i for i, e in enumerate(ELEMENTS)}, len(ELEMENTS) + 1),
    (_slots(DEGREES), len(DEGREES) + 1),
    (_slots(FORMAL_CHARGES), len(FORMAL_CHARGES) + 1),
    (_slots(ATOM_STEREO), len(ATOM_STEREO) + 1),
    (_slots(NUM_HS), len(NUM_HS) + 1),
    (_slots(HYBRIDIZATIONS), len(HYBRIDIZATIONS) + 1),
)
_OFFSETS = np.cumsum([0] + [width for _, width in _CATEGORIES])  # start of each one-hot block


def atom_feature_matrix(mol: Chem.Mol) -> np.ndarray:
    """(n_atoms, atom_feature_dim()) float32: :func:`atom_features` of every atom, built with
    one array write per feature block instead of Python lists (~1.5x faster; the per-atom
    function stays the readable definition and a test checks the two agree)."""
    n = mol.GetNumAtoms()
    atoms = [mol.GetAtomWithIdx(i) for i in range(n)]  # ~25% faster than list(GetAtoms())
    x = np.zeros((n, atom_feature_dim()), dtype=np.float32)
    if n == 0:
        return x
    stereo = atom_stereo_classes(atoms, mol)  # labels CIP codes only if an atom has a tag
    raw = [
        (
            a.GetAtomicNum(),
            a.GetTotalDegree(),
            a.GetFormalCharge(),
            stereo[i],
            a.GetTotalNumHs(),
            a.GetHybridization(),
        )
        for i, a in enumerate(atoms)
    ]
    rows = np.arange(n)
    for k, (lookup, width) in enumerate(_CATEGORIES):
        other = width - 1
        slots = np.fromiter((lookup.get(r[k], other) for r in raw), dtype=np.int64, count=n)
        x[rows, _OFFSETS[k] + slots] = 1.0
    col = int(_OFFSETS[-1])
    x[:, col] = [a.GetIsAromatic() for a in atoms]
    x[:, col + 1] = [a.IsInRing() for a in atoms]
    ring_info = mol.GetRingInfo()
    for ring in ring_info.AtomRings():
        if len(ring) in RING_SIZES:
            x[list(ring), col + 2 + RING_SIZES.index(len(ring))] = 1.0
    x[:, col + 2 + len(RING_SIZES)] = [a.GetMass() / 100.0 for a in atoms]
    return x
