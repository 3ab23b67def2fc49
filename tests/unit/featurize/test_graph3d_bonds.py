"""The 3D featuriser mode ``bonds`` contains the 2D featuriser (RDKit atom and bond
features on bond tokens) plus distances; bonds of structures are perceived by RDKit, with a
radius-graph fallback that names the structure; version 2 artifacts keep their radius graph."""

from __future__ import annotations

import logging
from pathlib import Path

import ase
import ase.build
import ase.io
import numpy as np
import pytest
from rdkit import Chem

from molprop.chem.perceive import BondPerceptionError, perceive_bonds
from molprop.chem.structures import Structure3D, from_ase
from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig, Graph2DFeaturizer, build_featurizer
from molprop.featurize.atoms import _OFFSETS as ATOM_OFFSETS
from molprop.featurize.atoms import atom_feature_dim
from molprop.featurize.bonds import bond_feature_dim
from molprop.featurize.gaussian import gaussian_basis
from molprop.featurize.graph3d import ELEMENTS_3D, Graph3DFeaturizer
from molprop.featurize.stereo import BOND_STEREO

DATA = Path(__file__).resolve().parents[3] / "data"
QM9 = DATA / "qm9" / "qm9_3d_shuffled_part01of18.extxyz.gz"
A, B = atom_feature_dim(), bond_feature_dim()
F2D = Graph2DFeaturizer()


@pytest.fixture(scope="module")
def qm9() -> list[Structure3D]:
    return [from_ase(a) for a in ase.io.read(QM9, index=":40")]


def _sorted_rows(m: np.ndarray) -> np.ndarray:
    return m[np.lexsort(m.T[::-1])]


def test_smiles_graph_contains_the_2d_graph():
    """Same atoms, same bond tokens in the same order, 2D features as the first columns; the
    not-a-bond flag is 0 on every bond."""
    feat = Graph3DFeaturizer(include_h=False)
    for smiles in ("CC(=O)Nc1ccc(O)cc1", "C[C@H](N)C(=O)O", "c1ccncc1"):
        g3, g2 = feat.from_smiles(smiles), F2D.from_smiles(smiles)
        canonical = F2D.from_smiles(Chem.MolToSmiles(Chem.MolFromSmiles(smiles)))
        # the conformer is embedded in canonical atom order: compare with that 2D graph
        assert g3.n_nodes == g2.n_nodes and g3.n_edges == g2.n_edges
        np.testing.assert_array_equal(g3.x[:, :A], canonical.x)
        np.testing.assert_array_equal(g3.edge_attr[:, :B], canonical.edge_attr)
        np.testing.assert_array_equal(g3.edge_index, canonical.edge_index)
        assert (g3.edge_attr[:, B] == 0).all()
        assert g3.x.shape[1] == feat.node_dim and g3.edge_attr.shape[1] == feat.edge_dim
        d = np.linalg.norm(g3.pos[g3.edge_index[1]] - g3.pos[g3.edge_index[0]], axis=1)
        np.testing.assert_allclose(g3.edge_attr[:, B + 1 :], gaussian_basis(d, 5.0, 32), atol=1e-5)
        canon = Chem.MolFromSmiles(Chem.MolToSmiles(Chem.MolFromSmiles(smiles)))
        assert g3.z.tolist() == [a.GetAtomicNum() for a in canon.GetAtoms()]


def test_perceived_qm9_bonds_give_the_2d_features_of_the_smiles(qm9):
    """xyz frames (no bonds): RDKit perception gives the 2D atom and bond features of the
    molecule's SMILES (as multisets of rows), stereo columns left out: QM9's SMILES carry no
    stereo, the geometry does (checked apart: perceived molecules get CIP labels)."""
    feat = Graph3DFeaturizer(include_h=False)
    atom_cols = np.ones(A, bool)
    atom_cols[ATOM_OFFSETS[3] : ATOM_OFFSETS[4]] = False  # the atom stereo one-hot block
    bond_cols = np.ones(B, bool)
    bond_cols[B - len(BOND_STEREO) - 1 :] = False  # the bond stereo one-hot block (last)
    n_same, n_stereo = 0, 0
    for s in qm9:
        g3, g2 = feat(s), F2D.from_smiles(s.info["smiles"])
        x3, e3 = g3.x[:, :A], g3.edge_attr[:, :B]
        n_stereo += bool((x3[:, ~atom_cols][:, 0] == 0).any())  # an atom with stereo
        if g3.n_nodes == g2.n_nodes and g3.n_edges == g2.n_edges:
            same_x = np.array_equal(
                _sorted_rows(x3[:, atom_cols]), _sorted_rows(g2.x[:, atom_cols])
            )
            same_e = np.array_equal(
                _sorted_rows(e3[:, bond_cols]), _sorted_rows(g2.edge_attr[:, bond_cols])
            )
            n_same += same_x and same_e
    assert n_same == len(qm9)  # measured: all 40
    assert n_stereo > 10  # most of these QM9 molecules have stereo centres


def test_radius_tokens_are_non_bonded_pairs_flagged_not_a_bond(qm9):
    s = qm9[0]
    plain = Graph3DFeaturizer(include_h=False)(s)
    g = Graph3DFeaturizer(include_h=False, radius_tokens=3.0)(s)
    n_bonds = plain.n_edges
    np.testing.assert_array_equal(g.edge_index[:, :n_bonds], plain.edge_index)
    extra = g.edge_attr[n_bonds:]
    assert len(extra) > 0 and (extra[:, B] == 1).all() and (extra[:, :B] == 0).all()
    bonded = set(map(tuple, plain.edge_index.T.tolist()))
    pairs = set(map(tuple, g.edge_index[:, n_bonds:].T.tolist()))
    assert not pairs & bonded
    d = np.linalg.norm(g.pos[g.edge_index[1, n_bonds:]] - g.pos[g.edge_index[0, n_bonds:]], axis=1)
    assert d.max() < 3.0
    # every non-bonded pair under 3 Å is there, in both directions
    pos = g.pos
    full = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    want = {(i, j) for i, j in zip(*np.nonzero((full < 3.0) & (full > 0))) if (i, j) not in bonded}
    assert pairs == want


def test_atom_gaussians_sum_over_all_atoms_hydrogens_included(qm9):
    """On by default; with include_h false the heavy atoms still see their hydrogens."""
    s = qm9[3]
    feat = Graph3DFeaturizer(include_h=False, num_gaussians=8)
    g = feat(s)
    heavy = np.flatnonzero(s.numbers != 1)
    d = np.linalg.norm(s.pos[:, None] - s.pos[None], axis=-1)
    want = []
    for i in heavy:
        others = d[i][(d[i] < 5.0) & (np.arange(s.n_atoms) != i)]
        want.append(gaussian_basis(others, 5.0, 8).sum(axis=0))
    np.testing.assert_allclose(g.x[:, -8:], np.asarray(want), rtol=1e-5, atol=1e-6)
    no_h = Graph3DFeaturizer(include_h=False, num_gaussians=8, atom_gaussians=False)(s)
    assert no_h.x.shape[1] == g.x.shape[1] - 8


def test_failed_perception_falls_back_to_radius_tokens_with_a_note(qm9, caplog):
    s = qm9[0]
    feat = Graph3DFeaturizer(include_h=False, perceive_max_atoms=3, max_neighbors=None)
    with caplog.at_level(logging.WARNING, logger="molprop.featurize.graph3d"):
        g = feat(s)
    assert s.info["smiles"] in caplog.text and "more than the 3 allowed" in caplog.text
    assert (g.edge_attr[:, B] == 1).all() and (g.edge_attr[:, :B] == 0).all()
    assert g.x.shape == (int((s.numbers != 1).sum()), feat.node_dim)
    d = np.linalg.norm(g.pos[g.edge_index[1]] - g.pos[g.edge_index[0]], axis=1)
    n = g.n_nodes
    assert g.n_edges == n * (n - 1) and d.max() < 5.0  # every heavy pair of a small molecule
    with pytest.raises(BondPerceptionError, match="could not assign bonds"):
        # a lone carbon with one hydrogen: no valid bond orders for charge 0
        perceive_bonds(np.array([6, 1]), np.array([[0, 0, 0], [1.1, 0, 0.0]]))


def test_periodic_systems_use_the_radius_graph():
    nacl = from_ase(ase.build.bulk("NaCl", "rocksalt", a=5.64))
    g = Graph3DFeaturizer()(nacl)
    assert g.edge_vec_shift is not None and (g.edge_attr[:, B] == 1).all()
    assert g.x.shape == (2, Graph3DFeaturizer().node_dim)
    assert g.x[:, A : A + len(ELEMENTS_3D) + 1].sum() == 2  # element one-hot of Na and Cl


def test_version_2_artifacts_keep_the_radius_graph_and_others_refuse(qm9):
    """A version-2 config (no mode, atom sums off by default then) builds the radius-mode
    featuriser with identical features; version 1, or mode bonds at version 2, is refused
    with the retrain message."""
    old = build_featurizer(FeaturizerConfig.from_dict({"kind": "3d", "params": {}, "version": 2}))
    assert old.mode == "radius" and not old.atom_gaussians
    same = Graph3DFeaturizer(mode="radius", atom_gaussians=False)
    for s in qm9[:5]:
        a, b = old(s), same(s)
        np.testing.assert_array_equal(a.x, b.x)
        np.testing.assert_array_equal(a.edge_attr, b.edge_attr)
        assert a.x.shape[1] == len(ELEMENTS_3D) + 1 and a.edge_attr.shape[1] == 32
    with_sums = FeaturizerConfig("3d", {"atom_gaussians": True}, version=2)
    assert build_featurizer(with_sums).atom_gaussians
    for bad in (
        FeaturizerConfig("3d", {}, version=1),
        FeaturizerConfig("3d", {"mode": "bonds"}, version=2),
    ):
        with pytest.raises(ConfigError, match="retrain"):
            build_featurizer(bad)
    current = build_featurizer(FeaturizerConfig("3d"))
    assert current.mode == "bonds" and current.atom_gaussians
    assert FeaturizerConfig("3d").to_dict()["version"] == 4


def test_default_hydrogens_are_nodes_only_on_radius_graphs(qm9):
    """Version 4 default (``include_h`` None): a molecule whose bonds are known is the heavy-atom
    graph (its hydrogens are atom features, as in 2D); a periodic system, a failed perception
    and mode ``radius`` keep the hydrogens as nodes (they have no other way to see them)."""
    s = qm9[3]
    n_heavy, n_all = int((s.numbers != 1).sum()), len(s.numbers)
    assert n_heavy < n_all
    default = Graph3DFeaturizer()
    np.testing.assert_array_equal(default(s).x, Graph3DFeaturizer(include_h=False)(s).x)
    assert default(s).n_nodes == n_heavy
    assert Graph3DFeaturizer(perceive_max_atoms=3)(s).n_nodes == n_all  # fallback: all atoms
    assert Graph3DFeaturizer(mode="radius")(s).n_nodes == n_all
    assert Graph3DFeaturizer(include_h=False, perceive_max_atoms=3)(s).n_nodes == n_heavy
    slab = ase.Atoms(
        "OH2", positions=[[0, 0, 0], [0.96, 0, 0], [-0.24, 0.93, 0]], cell=[6, 6, 6], pbc=True
    )
    assert default(from_ase(slab)).n_nodes == 3  # periodic: hydrogens stay
    assert default.from_smiles("CCO").n_nodes == 3


def test_version_3_artifacts_keep_their_hydrogen_nodes(qm9):
    """A version-3 config without ``include_h`` was trained with hydrogens as nodes: it builds
    exactly that featuriser (both modes); an explicit ``include_h`` is kept."""
    v3 = build_featurizer(FeaturizerConfig("3d", {}, version=3))
    assert v3.include_h is True and v3.mode == "bonds"
    s = qm9[3]
    np.testing.assert_array_equal(v3(s).x, Graph3DFeaturizer(include_h=True)(s).x)
    assert v3(s).n_nodes == len(s.numbers)
    radius = build_featurizer(FeaturizerConfig("3d", {"mode": "radius"}, version=3))
    assert radius.mode == "radius" and radius.include_h is True
    heavy = build_featurizer(FeaturizerConfig("3d", {"include_h": False}, version=3))
    assert heavy.include_h is False  # homo_lumo_gap_3d's config


def test_bad_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="mode"):
        Graph3DFeaturizer(mode="bonded")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="radius_tokens"):
        Graph3DFeaturizer(radius_tokens=0.0)


def test_a_version_2_3d_artifact_predicts_as_before(qm9, tmp_path):
    """An artifact written before the ``bonds`` mode (config.json: featuriser ``3d`` version 2, no mode,
    no loss, no pair_rbf) loads and predicts on structures exactly what its model gives on the
    radius-graph features it was trained with."""
    import json

    import torch

    from molprop import Predictor
    from molprop.artifact.config import ArtifactConfig
    from molprop.artifact.store import save_artifact
    from molprop.data import collate_graphs
    from molprop.models.config import ModelConfig, TaskConfig
    from molprop.training.fit import build_model

    radius = Graph3DFeaturizer(mode="radius", atom_gaussians=False, max_neighbors=6)
    mc = ModelConfig(
        node_dim=radius.node_dim,
        edge_dim=radius.edge_dim,
        n_tasks=1,
        hidden_dim=16,
        heads=2,
        layers="MSMP S",
        num_seeds=4,
    )
    task = TaskConfig(("gap",), scaler_mean=(6.8,), scaler_std=(1.3,))
    config = ArtifactConfig(
        model=mc, task=task, featurizer=FeaturizerConfig("3d", {"max_neighbors": 6}, version=2)
    )
    model = build_model(mc, 0).eval()
    save_artifact(tmp_path, config, [model])
    raw = json.loads((tmp_path / "config.json").read_text())
    for section, key in (("train", "loss"), ("model", "pair_rbf")):
        raw[section].pop(key, None)  # as an older molprop wrote it (pair_rbf 0 is left out)
    raw["featurizer"]["params"].pop("mode", None)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    got = Predictor.from_pretrained(tmp_path).predict_structures(qm9[:6])["gap"].to_numpy()
    with torch.no_grad():
        out = model(collate_graphs([radius(s) for s in qm9[:6]])).numpy()[:, 0]
    np.testing.assert_allclose(got, out * 1.3 + 6.8, rtol=1e-5, atol=1e-5)
