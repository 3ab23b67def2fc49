"""RDKit bond features: type, conjugation, ring membership, stereo (one-hot + other)."""

from __future__ import annotations

from rdkit import Chem

from molprop.featurize.atoms import one_hot

BOND_TYPES: tuple[Chem.BondType, ...] = (
    Chem.BondType.SINGLE,
    Chem.BondType.DOUBLE,
    Chem.BondType.TRIPLE,
    Chem.BondType.AROMATIC,
)
BOND_STEREO: tuple[Chem.BondStereo, ...] = (
    Chem.BondStereo.STEREONONE,
    Chem.BondStereo.STEREOANY,
    Chem.BondStereo.STEREOZ,
    Chem.BondStereo.STEREOE,
    Chem.BondStereo.STEREOCIS,
    Chem.BondStereo.STEREOTRANS,
)


def bond_feature_dim() -> int:
    """Length of the vector returned by :func:`bond_features`."""
    return len(BOND_TYPES) + 1 + 2 + len(BOND_STEREO) + 1


def bond_features(bond: Chem.Bond) -> list[float]:
    """type (one-hot + other) | conjugated | in ring | stereo (one-hot + other)."""
    return (
        one_hot(bond.GetBondType(), BOND_TYPES)
        + [float(bond.GetIsConjugated()), float(bond.IsInRing())]
        + one_hot(bond.GetStereo(), BOND_STEREO)
    )
