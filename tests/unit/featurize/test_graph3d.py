"""3D featuriser: Gaussian basis, radius graph, conformers, and E(3)/permutation invariance
of model predictions on real QM9 molecules."""

from __future__ import annotations

import ast
from pathlib import Path

import ase.io
import numpy as np
import pytest
import torch

from molprop.chem.structures import Structure3D, from_ase
from molprop.data.batch import collate_graphs
from molprop.errors import InvalidInputError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.featurize.gaussian import cosine_cutoff, gaussian_basis
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.featurize.radius import molecule_neighbors
from molprop.models.config import ModelConfig
from molprop.training.fit import build_model

DATA = Path(__file__).resolve().parents[3] / "data"
QM9 = DATA / "qm9" / "qm9_3d_shuffled_part01of18.extxyz.gz"


@pytest.fixture(scope="module")
def qm9_molecules() -> list[Structure3D]:
    return [from_ase(a) for a in ase.io.read(QM9, index=":6")]


def test_gaussian_basis_shape_peak_and_cutoff():
    d = np.array([0.0, 2.5, 4.99, 5.0, 7.0])
    rbf = gaussian_basis(d, cutoff=5.0, num_gaussians=11)
    assert rbf.shape == (5, 11)
    assert np.argmax(rbf[1]) == 5  # centre 2.5 Å of linspace(0, 5, 11)
    assert np.all(rbf[3:] == 0.0)  # nothing at or beyond the cutoff
    assert rbf[2].max() < 1e-3  # smooth: almost zero just inside the cutoff
    assert cosine_cutoff(np.array([0.0]), 5.0)[0] == pytest.approx(1.0)


def test_max_neighbors_keeps_ties():
    # centre atom with four atoms at 1 Å (a square) and one at 2 Å
    pos = np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 2.0]])
    nl = molecule_neighbors(pos, cutoff=5.0, max_neighbors=2)
    centre = nl.dst[nl.src == 0]
    assert sorted(centre.tolist()) == [1, 2, 3, 4]  # all four tied neighbours, not the far one
    full = molecule_neighbors(pos, cutoff=5.0)
    assert (full.src == 0).sum() == 5


def test_registered_and_dimensions(qm9_molecules):
    params = {"mode": "radius", "num_gaussians": 16, "tags": True}
    feat = build_featurizer(FeaturizerConfig("3d", params))
    assert isinstance(feat, Graph3DFeaturizer)
    g = feat(qm9_molecules[0])
    assert g.x.shape == (qm9_molecules[0].n_atoms, feat.node_dim)
    assert g.edge_attr.shape == (g.n_edges, 16)
    assert g.edge_vec_shift is None and g.pos is not None
    d = np.linalg.norm(g.pos[g.edge_index[1]] - g.pos[g.edge_index[0]], axis=1)
    assert d.max() < 5.0 and d.min() > 0.5


def test_from_smiles_embeds_and_failure_is_invalid_input():
    feat = Graph3DFeaturizer(include_h=True)
    g = feat.from_smiles("CCO")
    assert g.n_nodes == 9  # explicit hydrogens
    d = np.linalg.norm(g.pos[0] - g.pos[1])
    assert 1.4 < d < 1.65  # a relaxed C-C bond
    again = feat.from_smiles("CCO")
    np.testing.assert_allclose(g.pos, again.pos)  # seeded
    with pytest.raises(InvalidInputError, match="could not embed"):
        feat.from_smiles("C1#CC1")  # cyclopropyne: no 3D embedding
    with pytest.raises(InvalidInputError):
        feat.from_smiles("C1CC")  # unclosed ring: a parse failure, same error type


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _moved(s: Structure3D, rot: np.ndarray, shift: np.ndarray, perm: np.ndarray) -> Structure3D:
    return Structure3D(
        numbers=s.numbers[perm], pos=(s.pos @ rot.T + shift)[perm], cell=s.cell, pbc=s.pbc
    )


@pytest.mark.parametrize("token_kind", ["esa", "nsa"])
@pytest.mark.parametrize("mode", ["radius", "bonds"])
def test_rotation_translation_permutation_invariance(qm9_molecules, token_kind, mode):
    """Both 3D modes; ``bonds`` with perceived bonds, non-bonded radius tokens and the
    element-pair Gaussians."""
    bonds = mode == "bonds"
    feat = Graph3DFeaturizer(
        mode=mode,
        num_gaussians=16,
        max_neighbors=8,
        atom_gaussians=True,
        radius_tokens=3.0 if bonds else None,
    )
    config = ModelConfig(
        node_dim=feat.node_dim,
        edge_dim=feat.edge_dim,
        n_tasks=2,
        token_kind=token_kind,
        hidden_dim=16,
        heads=2,
        layers="MSMP S",
        num_seeds=4,
        head_hidden=16,
        pair_rbf=4 if bonds else 0,
    )
    model = build_model(config, 0).eval()
    rng = np.random.default_rng(0)

    def predict(structures):
        with torch.no_grad():
            return model(collate_graphs([feat(s) for s in structures])).numpy()

    base = predict(qm9_molecules)
    moved = [
        _moved(s, _random_rotation(rng), rng.normal(size=3) * 10, rng.permutation(s.n_atoms))
        for s in qm9_molecules
    ]
    np.testing.assert_allclose(predict(moved), base, atol=1e-4)
    # the model does see the geometry: stretching a molecule changes its prediction
    stretched = [
        _moved(s, np.eye(3) * 1.15, np.zeros(3), np.arange(s.n_atoms)) for s in qm9_molecules
    ]
    assert np.abs(predict(stretched) - base).max() > 1e-3


def test_featurize_neither_reads_files_nor_predicts():
    """Featurisers turn records into graphs; reading tables (molprop.io) and predicting
    (molprop.inference) are done by their callers, never looked up on a featuriser."""
    package = Path(__file__).resolve().parents[3] / "molprop" / "featurize"
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [
                f"{path.name}:{node.lineno} {name}"
                for name in names
                if name.startswith(("molprop.io", "molprop.inference"))
            ]
    assert found == []
    assert not hasattr(Graph3DFeaturizer(), "load_table")
    assert not hasattr(Graph3DFeaturizer(), "predict_file")
