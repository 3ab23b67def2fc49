"""RDKit bond features: type, conjugation, ring membership, stereo (one-hot + other).

Stereo is the bond's CIP class (E/Z, see :mod:`molprop.featurize.stereo`), never RDKit's
STEREOCIS/STEREOTRANS, which are relative to the atom order.
"""

from __future__ import annotations

import numpy as np
from rdkit import Chem

from molprop.featurize.atoms import one_hot
from molprop.featurize.stereo import (
    BOND_STEREO,
    assign_cip_labels,
    bond_stereo,
    bond_stereo_classes,
)

BOND_TYPES: tuple[Chem.BondType, ...] = (
    Chem.BondType.SINGLE,
    Chem.BondType.DOUBLE,
    Chem.BondType.TRIPLE,
    Chem.BondType.AROMATIC,
)


def bond_feature_dim() -> int:
    """Length of the vector returned by :func:`bond_features`."""
    return len(BOND_TYPES) + 1 + 2 + len(BOND_STEREO) + 1


def bond_features(bond: Chem.Bond) -> list[float]:
    """type (one-hot + other) | conjugated | in ring | stereo (one-hot + other)."""
    assign_cip_labels(bond.GetOwningMol())
    return (
        one_hot(bond.GetBondType(), BOND_TYPES)
        + [float(bond.GetIsConjugated()), float(bond.IsInRing())]
        + one_hot(bond_stereo(bond), BOND_STEREO)
    )


_TYPE_SLOTS = {t: i for i, t in enumerate(BOND_TYPES)}
_STEREO_SLOTS = {t: i for i, t in enumerate(BOND_STEREO)}


def bond_feature_matrix(mol: Chem.Mol) -> tuple[np.ndarray, np.ndarray]:
    """Endpoints (n_bonds, 2) int64 and :func:`bond_features` of every bond as one
    (n_bonds, bond_feature_dim()) float32 array (a test checks the two agree)."""
    n = mol.GetNumBonds()
    bonds = [mol.GetBondWithIdx(i) for i in range(n)]
    ends = np.zeros((n, 2), dtype=np.int64)
    feats = np.zeros((n, bond_feature_dim()), dtype=np.float32)
    if n == 0:
        return ends, feats
    stereo = bond_stereo_classes(bonds, mol)  # labels CIP codes only if a bond has a tag
    raw = [
        (
            b.GetBeginAtomIdx(),
            b.GetEndAtomIdx(),
            b.GetBondType(),
            b.GetIsConjugated(),
            b.IsInRing(),
            stereo[i],
        )
        for i, b in enumerate(bonds)
    ]
    rows = np.arange(n)
    ends[:] = [(r[0], r[1]) for r in raw]
    other_type, stereo_at = len(BOND_TYPES), len(BOND_TYPES) + 3
    feats[rows, [_TYPE_SLOTS.get(r[2], other_type) for r in raw]] = 1.0
    feats[:, other_type + 1] = [r[3] for r in raw]
    feats[:, other_type + 2] = [r[4] for r in raw]
    feats[rows, [stereo_at + _STEREO_SLOTS.get(r[5], len(BOND_STEREO)) for r in raw]] = 1.0
    return ends, feats
