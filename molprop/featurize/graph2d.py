"""2D featuriser: RDKit molecule -> :class:`MolGraph` with atom and bond features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rdkit import Chem

from molprop.chem.fingerprints import morgan_bits
from molprop.chem.smiles import parse_smiles
from molprop.featurize.atoms import atom_feature_dim, atom_feature_matrix
from molprop.featurize.bonds import bond_feature_dim, bond_feature_matrix
from molprop.graph import MolGraph


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
        ends, feats = bond_feature_matrix(mol)
        # every bond -> edges (i, j) and (j, i), interleaved: bond k gives edges 2k and 2k + 1
        edge_index = np.stack([ends, ends[:, ::-1]], axis=1).reshape(-1, 2).T.copy()
        edge_attr = np.repeat(feats, 2, axis=0)
        return MolGraph(
            x=atom_feature_matrix(mol),
            edge_index=edge_index,
            edge_attr=edge_attr,
            fingerprint=morgan_bits(mol),  # the domain's fingerprint, while the molecule is here
            heavy_atoms=mol.GetNumHeavyAtoms(),
        )
