"""Learnable Gaussian distance basis: trains, stays rotation invariant, needs coordinates."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from molprop.data import collate_graphs
from molprop.featurize import Graph2DFeaturizer
from molprop.graph import MolGraph
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.nn.distance_basis import LearnableGaussianBasis, PairGaussianBasis


def _graph(pos: np.ndarray) -> MolGraph:
    n = len(pos)
    src, dst = np.nonzero(np.linalg.norm(pos[:, None] - pos[None], axis=-1) < 3.0)
    keep = src != dst
    return MolGraph(
        x=np.eye(n, 4, dtype=np.float32),
        edge_index=np.stack([src[keep], dst[keep]]),
        edge_attr=np.ones((int(keep.sum()), 2), np.float32),
        pos=pos.astype(np.float32),
    )


def test_basis_shape_cutoff_and_gradients():
    basis = LearnableGaussianBasis(8, cutoff=5.0)
    d = torch.tensor([0.0, 1.0, 4.99, 5.0, 7.0])
    out = basis(d)
    assert out.shape == (5, 8)
    assert torch.all(out[3:] == 0) and out[1].max() > 0.5
    out.sum().backward()
    assert basis.centres.grad.abs().sum() > 0 and basis.log_widths.grad.abs().sum() > 0


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_model_with_learnable_basis_is_rotation_invariant_and_uses_distances(kind):
    rng = np.random.default_rng(0)
    pos = rng.normal(scale=1.2, size=(6, 3))
    cfg = ModelConfig(
        node_dim=4,
        edge_dim=2,
        n_tasks=1,
        token_kind=kind,
        hidden_dim=16,
        heads=2,
        num_seeds=2,
        layers="MSP",
        learnable_rbf=8,
        rbf_cutoff=3.0,
    )
    torch.manual_seed(0)
    model = MolPropModel.from_config(cfg).eval()
    rot = Rotation.from_euler("xyz", [0.3, 1.1, -0.7]).as_matrix()
    with torch.no_grad():
        a = model(collate_graphs([_graph(pos)]))
        b = model(collate_graphs([_graph(pos @ rot.T + 2.0)]))
        c = model(collate_graphs([_graph(pos * 1.1)]))
    assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(a, c, atol=1e-4)  # stretched geometry: the distances matter


def test_learnable_basis_needs_coordinates():
    f = Graph2DFeaturizer()
    cfg = ModelConfig(
        node_dim=f.node_dim,
        edge_dim=f.edge_dim,
        n_tasks=1,
        hidden_dim=16,
        heads=2,
        num_seeds=2,
        layers="MSP",
        learnable_rbf=4,
    )
    with pytest.raises(ValueError, match="3D"):
        MolPropModel.from_config(cfg)(collate_graphs([f.from_smiles("CCO")]))


# ----------------------------------------------------------------- element-pair Gaussians


def test_pair_gaussians_start_as_the_plain_basis_and_learn_per_element_pair():

    torch.manual_seed(0)
    pair = PairGaussianBasis(8, 5.0)
    plain = LearnableGaussianBasis(8, 5.0)
    d = torch.tensor([0.96, 1.09, 1.43, 1.43, 4.9, 5.2])
    zi = torch.tensor([8, 6, 6, 7, 1, 6])
    zj = torch.tensor([1, 1, 8, 6, 1, 6])
    torch.testing.assert_close(pair(d, zi, zj), plain(d))  # scale 1, offset 0 at the start
    with torch.no_grad():
        pair.scale_delta.weight.normal_(0, 0.3)
        pair.offset.weight.normal_(0, 0.3)
    out = pair(d, zi, zj)
    torch.testing.assert_close(out, pair(d, zj, zi))  # symmetric in the two atoms
    assert not torch.allclose(out[2], out[3])  # same length, C-O vs N-C: different features
    assert (out[5] == 0).all() and out[4].abs().max() < 0.02  # past / near the cutoff
    loss = out.square().sum()
    loss.backward()
    assert pair.scale_delta.weight.grad.abs().sum() > 0 and pair.offset.weight.grad is not None
