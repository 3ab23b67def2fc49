from __future__ import annotations

import numpy as np
import pandas as pd

from molprop.chem.smiles import parse_smiles
from molprop.errors import InvalidInputError
from molprop.featurize import Graph2DFeaturizer
from molprop.featurize.atoms import ELEMENTS, atom_feature_dim, atom_features
from molprop.featurize.bonds import BOND_STEREO, bond_feature_dim, bond_features

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


def _reference_graph(mol) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-atom / per-bond definitions, assembled the slow, obvious way."""
    x = np.asarray([atom_features(a) for a in mol.GetAtoms()], dtype=np.float32)
    src, dst, feats = [], [], []
    for bond in mol.GetBonds():
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        src += [i, j]
        dst += [j, i]
        feats += [bond_features(bond)] * 2
    edge_attr = np.asarray(feats, dtype=np.float32).reshape(-1, bond_feature_dim())
    return (
        x.reshape(-1, atom_feature_dim()),
        np.asarray([src, dst], dtype=np.int64).reshape(2, -1),
        edge_attr,
    )


def test_vectorised_featuriser_equals_the_per_atom_definition(data_dir):
    # Real molecules (ESOL, BBBP: stereo bonds, charges, rings of 3-8, salts) + edge cases.
    esol = pd.read_csv(data_dir / "moleculenet" / "ESOL.csv.gz")["smiles"].tolist()
    bbbp = pd.read_csv(data_dir / "moleculenet" / "bbbp.csv.gz")["smiles"].tolist()[:600]
    extra = ["C", "[Na+].[Cl-]", "[Te]", "F/C=C\\F", "C1CC1C1CCCCCCC1", "[NH4+]", "[2H]C"]
    checked = 0
    for smi in esol + bbbp + extra:
        try:
            mol = parse_smiles(smi)
        except InvalidInputError:
            continue
        g = F(mol)
        x, edge_index, edge_attr = _reference_graph(mol)
        for got, want in ((g.x, x), (g.edge_index, edge_index), (g.edge_attr, edge_attr)):
            assert got.dtype == want.dtype and got.shape == want.shape, smi
            assert np.array_equal(got, want), smi
        checked += 1
    assert checked > 1500
    # the reference really varies in the blocks the fast path writes separately
    assert F.from_smiles("F/C=C\\F").edge_attr[:, -len(BOND_STEREO) - 1 :].sum() > 0
