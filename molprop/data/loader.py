"""Datasets and size-bucketed batching.

Padding to a batch's largest graph wastes most of the work when sizes vary, so batches are
built from graphs of similar token count: always sorted for prediction, and for training
shuffled within large random pools before sorting (then the batch order is shuffled).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import DataLoader, Dataset, Sampler

from molprop.data.batch import GraphBatch, collate_graphs
from molprop.graph import MolGraph


class GraphDataset(Dataset):
    """Graphs with optional (n, T) targets (scaled) and (n, A) extra features."""

    def __init__(
        self,
        graphs: Sequence[MolGraph],
        targets: np.ndarray | None = None,
        extra: np.ndarray | None = None,
    ) -> None:
        self.graphs = list(graphs)
        self.targets = None if targets is None else np.asarray(targets, dtype=np.float32)
        self.extra = None if extra is None else np.asarray(extra, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, i: int) -> int:
        return i

    def sizes(self) -> np.ndarray:
        """Token count proxy used for bucketing: directed edges + nodes."""
        return np.asarray([g.n_edges + g.n_nodes for g in self.graphs])

    def collate(self, indices: Sequence[int]) -> GraphBatch:
        idx = np.asarray(indices, dtype=np.int64)
        return collate_graphs(
            [self.graphs[i] for i in idx],
            None if self.targets is None else self.targets[idx],
            None if self.extra is None else self.extra[idx],
        )


class SizeBucketBatchSampler(Sampler[list[int]]):
    """Batches of similar-size graphs.

    ``shuffle=False``: indices sorted by size, cut into batches (deterministic). With
    ``max_tokens`` a batch also ends before its molecule count times its largest size would
    exceed ``max_tokens`` (token-budget batching for inference; a molecule larger than the
    budget forms a batch of its own).
    ``shuffle=True``: each epoch, a random permutation is cut into pools of
    ``pool_batches * batch_size``; each pool is sorted by size and cut into batches; the batch
    order is shuffled. Seeded by ``seed + epoch``.

    Data parallel (``num_replicas > 1``): every rank builds the same global batches and keeps
    the slice ``batch[rank::num_replicas]`` of each, so the effective batch and the number of
    optimiser steps equal those of one process (a global batch smaller than ``num_replicas``
    repeats its first index). ``set_epoch`` (called by Lightning before each epoch) makes the
    shuffle follow the trainer's epoch counter, which is what resume restores.
    """

    def __init__(
        self,
        sizes: np.ndarray,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        pool_batches: int = 16,
        num_replicas: int = 1,
        rank: int = 0,
        max_tokens: int | None = None,
    ) -> None:
        if max_tokens is not None and (shuffle or max_tokens < 1):
            raise ValueError("max_tokens needs shuffle=False and a positive budget")
        self.sizes = np.asarray(sizes)
        self.max_tokens = max_tokens
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.seed = seed
        self.pool_batches = pool_batches
        self.epoch = 0
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _shard(self, batch: list[int]) -> list[int]:
        if self.num_replicas == 1:
            return batch
        return batch[self.rank :: self.num_replicas] or batch[:1]

    def __len__(self) -> int:
        if self.max_tokens is not None:
            return len(self._cut(np.argsort(self.sizes, kind="stable")))
        return int(np.ceil(len(self.sizes) / self.batch_size))

    def _cut(self, order: np.ndarray) -> list[list[int]]:
        if self.max_tokens is None:
            step = self.batch_size
            return [order[i : i + step].tolist() for i in range(0, len(order), step)]
        batches: list[list[int]] = []
        current: list[int] = []
        widest = 0
        for i in order.tolist():
            size = max(1, int(self.sizes[i]))
            full = len(current) == self.batch_size
            if current and (full or (len(current) + 1) * max(widest, size) > self.max_tokens):
                batches.append(current)
                current, widest = [], 0
            current.append(i)
            widest = max(widest, size)
        return batches + [current] if current else batches

    def __iter__(self) -> Iterator[list[int]]:
        if not self.shuffle:
            for batch in self._cut(np.argsort(self.sizes, kind="stable")):
                yield self._shard(batch)
            return
        rng = np.random.default_rng(self.seed + self.epoch)
        self.epoch += 1
        perm = rng.permutation(len(self.sizes))
        pool = self.batch_size * self.pool_batches
        batches: list[list[int]] = []
        for start in range(0, len(perm), pool):
            chunk = perm[start : start + pool]
            batches += self._cut(chunk[np.argsort(self.sizes[chunk], kind="stable")])
        for i in rng.permutation(len(batches)):
            yield self._shard(batches[i])


def make_loader(
    dataset: GraphDataset,
    batch_size: int,
    shuffle: bool,
    seed: int = 0,
    num_replicas: int = 1,
    rank: int = 0,
) -> DataLoader:
    sampler = SizeBucketBatchSampler(
        dataset.sizes(),
        batch_size,
        shuffle=shuffle,
        seed=seed,
        num_replicas=num_replicas,
        rank=rank,
    )
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=dataset.collate, num_workers=0)


__all__ = ["GraphDataset", "SizeBucketBatchSampler", "make_loader"]
