"""Collation: a list of numpy :class:`MolGraph` -> one torch :class:`GraphBatch`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from molprop.graph import MolGraph


@dataclass
class GraphBatch:
    """Several graphs stacked as one disconnected graph (nodes and edges grouped by graph).

    Shapes (N nodes, E edges, B graphs, T targets, A extra features):
        x: (N, node_dim); edge_index: (2, E) global node ids; edge_attr: (E, edge_dim)
        node_graph: (N,) graph of each node; edge_graph: (E,) graph of each edge
        n_nodes, n_edges: (B,) counts; y, y_mask: (B, T) or None
        pos: (N, 3) or None; edge_vec_shift: (E, 3) or None (zeros for the molecules of a batch
            that also holds periodic graphs)
        z: (N,) int64 atomic numbers or None (only when every graph has them)
        extra: (B, A) per-graph features appended before the head (label augmentation) or None
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    edge_attr: torch.Tensor
    node_graph: torch.Tensor
    edge_graph: torch.Tensor
    n_nodes: torch.Tensor
    n_edges: torch.Tensor
    y: torch.Tensor | None = None
    y_mask: torch.Tensor | None = None
    pos: torch.Tensor | None = None
    edge_vec_shift: torch.Tensor | None = None
    extra: torch.Tensor | None = None
    z: torch.Tensor | None = None

    @property
    def num_graphs(self) -> int:
        return int(self.n_nodes.shape[0])

    def to(self, device: torch.device | str) -> GraphBatch:
        moved = {
            f.name: (v.to(device) if isinstance(v, torch.Tensor) else v)
            for f in fields(self)
            for v in [getattr(self, f.name)]
        }
        return GraphBatch(**moved)

    def labels(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, y_mask)`` of a labelled batch (training, validation); ``ValueError`` for a
        batch made without targets."""
        if self.y is None or self.y_mask is None:
            raise ValueError("this batch has no targets (collate_graphs without targets)")
        return self.y, self.y_mask

    def with_extra(self, extra: torch.Tensor | None) -> GraphBatch:
        return replace(self, extra=extra)


def collate_graphs(
    graphs: Sequence[MolGraph],
    targets: np.ndarray | None = None,
    extra: np.ndarray | None = None,
) -> GraphBatch:
    """Stack graphs; ``targets`` (B, T) may contain NaN (missing labels, masked out)."""
    n_nodes = np.asarray([g.n_nodes for g in graphs], dtype=np.int64)
    n_edges = np.asarray([g.n_edges for g in graphs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_nodes)[:-1]])
    x = np.concatenate([g.x for g in graphs], axis=0)
    edge_index = np.concatenate([g.edge_index + off for g, off in zip(graphs, offsets)], axis=1)
    edge_attr = np.concatenate([g.edge_attr for g in graphs], axis=0)
    batch = GraphBatch(
        x=torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),
        edge_index=torch.from_numpy(edge_index.astype(np.int64)),
        edge_attr=torch.from_numpy(np.ascontiguousarray(edge_attr, dtype=np.float32)),
        node_graph=torch.from_numpy(np.repeat(np.arange(len(graphs)), n_nodes)),
        edge_graph=torch.from_numpy(np.repeat(np.arange(len(graphs)), n_edges)),
        n_nodes=torch.from_numpy(n_nodes),
        n_edges=torch.from_numpy(n_edges),
    )
    if all(g.pos is not None for g in graphs):
        batch.pos = torch.from_numpy(np.concatenate([g.pos for g in graphs]).astype(np.float32))
    if all(g.z is not None for g in graphs):
        batch.z = torch.from_numpy(np.concatenate([g.z for g in graphs]).astype(np.int64))
    if any(g.edge_vec_shift is not None for g in graphs):  # molecules among crystals: zero shifts
        shifts = np.concatenate(
            [
                np.zeros((g.n_edges, 3)) if g.edge_vec_shift is None else g.edge_vec_shift
                for g in graphs
            ]
        ).astype(np.float32)
        batch.edge_vec_shift = torch.from_numpy(shifts.reshape(-1, 3))
    if targets is not None:
        t = np.asarray(targets, dtype=np.float32).reshape(len(graphs), -1)
        mask = np.isfinite(t)
        batch.y = torch.from_numpy(np.where(mask, t, 0.0).astype(np.float32))
        batch.y_mask = torch.from_numpy(mask)
    if extra is not None:
        batch.extra = torch.from_numpy(np.asarray(extra, dtype=np.float32).reshape(len(graphs), -1))
    return batch
