"""SizeBucketBatchSampler under data parallelism: rank shards partition each global batch."""

from __future__ import annotations

import numpy as np

from molprop.data.loader import SizeBucketBatchSampler


def _batches(sizes, shuffle, replicas=1, rank=0, epoch=0):
    s = SizeBucketBatchSampler(sizes, 8, shuffle=shuffle, seed=3, num_replicas=replicas, rank=rank)
    s.set_epoch(epoch)
    return list(s)


def test_shards_partition_the_one_process_batches() -> None:
    sizes = np.random.default_rng(0).integers(3, 60, size=203)
    for shuffle in (True, False):
        full = _batches(sizes, shuffle, epoch=2)
        r0, r1 = _batches(sizes, shuffle, 2, 0, epoch=2), _batches(sizes, shuffle, 2, 1, epoch=2)
        assert len(r0) == len(r1) == len(full)  # same number of optimiser steps on every rank
        for b, a0, a1 in zip(full, r0, r1, strict=True):
            assert sorted(a0 + a1) == sorted(b) and not set(a0) & set(a1)


def test_set_epoch_selects_the_shuffle() -> None:
    sizes = np.arange(100) % 17 + 3
    assert _batches(sizes, True, epoch=4) == _batches(sizes, True, epoch=4)
    assert _batches(sizes, True, epoch=4) != _batches(sizes, True, epoch=5)
