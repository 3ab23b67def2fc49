"""RDKit atom features.

Each categorical feature is one-hot over a documented list **plus a separate "other" bucket**:
an element (or degree, charge, ...) that is not in the list never aliases onto a real value.
"""

from __future__ import annotations

from rdkit import Chem

#: Elements with their own one-hot slot (anything else goes to the "other" slot).
ELEMENTS: tuple[str, ...] = (
    "H", "B", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Br", "I",
    "Li", "Na", "K", "Mg", "Ca", "Al", "Fe", "Co", "Ni", "Cu", "Zn", "Se", "Sn", "As", "Pt", "Hg",
)  # fmt: skip
DEGREES: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
FORMAL_CHARGES: tuple[int, ...] = (-2, -1, 0, 1, 2)
CHIRAL_TAGS: tuple[Chem.ChiralType, ...] = (
    Chem.ChiralType.CHI_UNSPECIFIED,
    Chem.ChiralType.CHI_TETRAHEDRAL_CW,
    Chem.ChiralType.CHI_TETRAHEDRAL_CCW,
)
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
        len(ELEMENTS) + 1 + len(DEGREES) + 1 + len(FORMAL_CHARGES) + 1 + len(CHIRAL_TAGS) + 1
        + len(NUM_HS) + 1 + len(HYBRIDIZATIONS) + 1 + 2 + len(RING_SIZES) + 1
    )  # fmt: skip


def atom_features(atom: Chem.Atom) -> list[float]:
    """Feature vector of one atom.

    Layout: element | degree | formal charge | chirality | total H count | hybridisation
    (each one-hot + other) | aromatic | in ring | ring sizes 3..8 | mass / 100.
    """
    return (
        one_hot(atom.GetSymbol(), ELEMENTS)
        + one_hot(atom.GetTotalDegree(), DEGREES)
        + one_hot(atom.GetFormalCharge(), FORMAL_CHARGES)
        + one_hot(atom.GetChiralTag(), CHIRAL_TAGS)
        + one_hot(atom.GetTotalNumHs(), NUM_HS)
        + one_hot(atom.GetHybridization(), HYBRIDIZATIONS)
        + [float(atom.GetIsAromatic()), float(atom.IsInRing())]
        + [float(atom.IsInRingSize(size)) for size in RING_SIZES]
        + [atom.GetMass() / 100.0]
    )
