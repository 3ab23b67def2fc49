"""2D featuriser: RDKit molecule -> :class:`MolGraph` with atom and bond features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rdkit import Chem

from molprop.chem.smiles import parse_smiles
from molprop.featurize.atoms import atom_feature_dim, atom_features
from molprop.featurize.bonds import bond_feature_dim, bond_features
from molprop.featurize.molgraph import MolGraph


@dataclass(frozen=True)
class Graph2DFeaturizer:
    """Heavy-atom graph of a molecule; every bond gives two directed edges."""

    kind: str = "2d"

    @property
    def node_dim(self) -> int:
        return atom_feature_dim()

    @property
    def edge_dim(self) -> int:
        return bond_feature_dim()

    def from_smiles(self, smiles: str) -> MolGraph:
        """Parse and featurise; raises :class:`InvalidInputError` with the reason."""
        return self(parse_smiles(smiles))

    def __call__(self, mol: Chem.Mol) -> MolGraph:
        x = np.asarray([atom_features(a) for a in mol.GetAtoms()], dtype=np.float32)
        src: list[int] = []
        dst: list[int] = []
        feats: list[list[float]] = []
        for bond in mol.GetBonds():
            i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
            f = bond_features(bond)
            src += [i, j]
            dst += [j, i]
            feats += [f, f]
        edge_index = np.asarray([src, dst], dtype=np.int64).reshape(2, -1)
        edge_attr = np.asarray(feats, dtype=np.float32).reshape(-1, self.edge_dim)
        return MolGraph(x=x, edge_index=edge_index, edge_attr=edge_attr)
