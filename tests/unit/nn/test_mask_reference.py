"""The benchmark's all-pairs (Algorithm 1) ESA mask equals molprop's per-graph mask."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.mask_reference import all_pairs_mask, reference_esa_mask
from molprop.data import collate_graphs
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.graph import MolGraph
from molprop.nn.edge_sets import edge_token_set


def random_graph(rng: np.random.Generator) -> MolGraph:
    n = int(rng.integers(1, 9))
    e = int(rng.integers(0, 14))
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    keep = src != dst
    return MolGraph(
        x=rng.normal(size=(n, 3)).astype(np.float32),
        edge_index=np.stack([src[keep], dst[keep]]).astype(np.int64),
        edge_attr=rng.normal(size=(int(keep.sum()), 2)).astype(np.float32),
    )


@pytest.mark.parametrize("seed", range(10))
def test_reference_mask_equals_molprop_mask_on_random_batches(seed):
    rng = np.random.default_rng(seed)
    graphs = [random_graph(rng) for _ in range(int(rng.integers(1, 7)))]
    batch = collate_graphs(graphs)
    assert torch.equal(reference_esa_mask(batch), edge_token_set(batch).structure_mask)


def test_reference_mask_equals_molprop_mask_on_real_molecules():
    featurizer = Graph2DFeaturizer()
    smiles = ["CCO", "c1ccccc1O", "[Na+].[Cl-]", "C", "CC(=O)Nc1ccc(O)cc1", "O=C=O"]
    batch = collate_graphs([featurizer.from_smiles(s) for s in smiles])
    assert torch.equal(reference_esa_mask(batch), edge_token_set(batch).structure_mask)


def test_all_pairs_mask_is_quadratic_in_total_edges_and_block_diagonal():
    # two disjoint paths 0-1-2 and 3-4: edges of different graphs never attend to each other
    src = torch.tensor([0, 1, 1, 2, 3, 4])
    dst = torch.tensor([1, 0, 2, 1, 4, 3])
    full = all_pairs_mask(src, dst)
    assert full.shape == (6, 6)
    assert not full[:4, 4:].any() and not full[4:, :4].any()
    assert full[0, 1] and full[0, 2] and not full[0, 0]
