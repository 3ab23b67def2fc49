from __future__ import annotations

import numpy as np

from molprop.data import GraphDataset, SizeBucketBatchSampler, collate_graphs
from molprop.featurize import Graph2DFeaturizer

F = Graph2DFeaturizer()


def test_sorted_batches_cover_every_index_once_and_group_sizes():
    sizes = np.random.default_rng(0).integers(1, 300, 1000)
    batches = list(SizeBucketBatchSampler(sizes, 64, shuffle=False))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(1000))
    spans = [sizes[b].max() - sizes[b].min() for b in batches]
    assert np.mean(spans) < 0.1 * (sizes.max() - sizes.min())


def test_shuffled_batches_change_each_epoch_but_cover_everything():
    sizes = np.random.default_rng(1).integers(1, 300, 500)
    sampler = SizeBucketBatchSampler(sizes, 32, shuffle=True, seed=3)
    e1, e2 = list(sampler), list(sampler)
    assert sorted(np.concatenate(e1).tolist()) == list(range(500))
    assert sorted(np.concatenate(e2).tolist()) == list(range(500))
    assert [b[:3] for b in e1] != [b[:3] for b in e2]
    # padding waste is far below a random batching's
    rand = np.random.default_rng(0).permutation(500).reshape(-1, 20)

    def waste(bs):
        return sum(len(b) * sizes[b].max() - sizes[b].sum() for b in bs)

    assert waste(e1) < 0.5 * waste([r.tolist() for r in rand])


def test_collate_offsets_targets_and_masks():
    graphs = [F.from_smiles(s) for s in ["CCO", "C", "c1ccccc1"]]
    y = np.array([[1.0, np.nan], [2.0, 3.0], [np.nan, np.nan]])
    batch = collate_graphs(graphs, y)
    assert batch.n_nodes.tolist() == [3, 1, 6]
    assert batch.edge_index.max().item() == 9
    assert batch.edge_index[:, 4:].min().item() >= 4  # benzene edges offset past CCO and C
    assert batch.y_mask.tolist() == [[True, False], [True, True], [False, False]]
    assert batch.y[0, 1].item() == 0.0
    ds = GraphDataset(graphs, y)
    assert ds.sizes().tolist() == [3 + 4, 1, 6 + 12]


def test_token_budget_batches_respect_budget_and_cap_and_cover_everything():
    sizes = np.random.default_rng(2).integers(1, 400, 2000)
    sizes[7] = 9000  # larger than the budget: a batch of its own
    sampler = SizeBucketBatchSampler(sizes, 256, shuffle=False, max_tokens=4096)
    batches = list(sampler)
    assert len(batches) == len(sampler)
    assert sorted(np.concatenate(batches).tolist()) == list(range(2000))
    assert [7] in batches
    for b in batches:
        assert len(b) <= 256
        assert len(b) == 1 or len(b) * sizes[b].max() <= 4096
    # greedy: no batch could have taken the next molecule without breaking budget or cap
    for b, nxt in zip(batches, batches[1:], strict=False):
        grown = b + nxt[:1]
        assert len(grown) > 256 or len(grown) * sizes[grown].max() > 4096
    # small molecules share a batch in large numbers, large ones in few
    assert len(batches[0]) > 10 * len(batches[-2])
    # tiny molecules stop at the molecule cap
    tiny = list(SizeBucketBatchSampler(np.full(600, 2), 256, shuffle=False, max_tokens=4096))
    assert [len(b) for b in tiny] == [256, 256, 88]


def test_token_budget_is_for_inference_only():
    import pytest

    with pytest.raises(ValueError, match="shuffle=False"):
        SizeBucketBatchSampler(np.ones(10), 4, shuffle=True, max_tokens=100)
