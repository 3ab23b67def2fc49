from __future__ import annotations

import numpy as np

from molprop.featurize import Graph2DFeaturizer
from molprop.featurize.atoms import ELEMENTS, atom_feature_dim
from molprop.featurize.bonds import bond_feature_dim

F = Graph2DFeaturizer()


def _element_block(x: np.ndarray) -> np.ndarray:
    return x[:, : len(ELEMENTS) + 1]


def test_shapes_and_directed_edges():
    g = F.from_smiles("CCO")
    assert g.x.shape == (3, atom_feature_dim())
    assert g.edge_index.shape == (2, 4)  # 2 bonds, both directions
    assert g.edge_attr.shape == (4, bond_feature_dim())
    pairs = {tuple(e) for e in g.edge_index.T.tolist()}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1)}
    assert g.x.dtype == np.float32 and g.edge_index.dtype == np.int64


def test_unknown_element_goes_to_other_bucket_not_a_real_element():
    # Te is not in the element list: it must use the "other" slot, never alias onto O or S.
    assert "Te" not in ELEMENTS
    te = _element_block(F.from_smiles("[Te]").x)[0]
    assert te[-1] == 1.0 and te[:-1].sum() == 0.0
    f_vec = _element_block(F.from_smiles("F").x)[0]
    o_vec = _element_block(F.from_smiles("O").x)[0]
    assert f_vec.argmax() == ELEMENTS.index("F")
    assert not np.array_equal(f_vec, o_vec)


def test_features_distinguish_charge_aromaticity_and_bond_type():
    benzene = F.from_smiles("c1ccccc1")
    hexene = F.from_smiles("C1=CCCCC1")
    assert not np.array_equal(benzene.x[0], hexene.x[3])
    assert not np.array_equal(benzene.edge_attr[0], hexene.edge_attr[0])
    neutral = F.from_smiles("CC(=O)O").x
    anion = F.from_smiles("CC(=O)[O-]").x
    assert not np.array_equal(neutral, anion)


def test_edgeless_molecules():
    g = F.from_smiles("[Na+].[Cl-]")
    assert g.n_nodes == 2 and g.n_edges == 0
    assert g.edge_attr.shape == (0, bond_feature_dim())
    assert F.from_smiles("C").n_edges == 0
