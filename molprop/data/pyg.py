"""A PyTorch Geometric batch -> the :class:`GraphBatch` molprop's models read.

PyG's ``Batch`` stacks graphs as :func:`~molprop.data.batch.collate_graphs` does (nodes and edges
grouped by graph, ``edge_index`` offset per graph), so the conversion only renames and counts:
``batch`` becomes ``node_graph``, the graph of each edge's source node ``edge_graph``. Nothing
here imports ``torch_geometric``: any object with the attributes below converts.
"""

from __future__ import annotations

from typing import Any

import torch

from molprop.data.batch import GraphBatch


def graph_batch_from_pyg(data: Any) -> GraphBatch:
    """The :class:`GraphBatch` of a PyG ``Batch`` (or of one ``Data``: a batch of one graph),
    on the device of ``data.x``.

    Reads ``x``, ``edge_index``, ``edge_attr`` (missing: (E, 0) features), ``batch`` (missing:
    every node in graph 0) and, where present, ``pos``, ``z`` and ``edge_vec_shift``; features
    and positions become float32, indices int64, as in ``collate_graphs``. Targets (``y``) are
    not model inputs and stay on ``data``. Nodes and edges must be grouped by graph, as PyG
    batches them (ValueError otherwise).

    Shapes: x (N, node_dim), edge_index (2, E), edge_attr (E, edge_dim), batch (N,) of B graphs
    -> GraphBatch with node_graph (N,), edge_graph (E,), n_nodes, n_edges (B,)
    """
    x = data.x.to(torch.float32)
    edge_index = data.edge_index.to(torch.int64)
    edge_attr = getattr(data, "edge_attr", None)
    if edge_attr is None:
        edge_attr = x.new_zeros(edge_index.shape[1], 0)
    node_graph = getattr(data, "batch", None)
    if node_graph is None:
        node_graph = torch.zeros(x.shape[0], dtype=torch.int64, device=x.device)
    node_graph = node_graph.to(torch.int64)
    n_graphs = getattr(data, "num_graphs", None)  # a Batch knows it (empty graphs included)
    if n_graphs is None:
        n_graphs = int(node_graph.max()) + 1 if node_graph.numel() else 1
    edge_graph = node_graph[edge_index[0]]
    if bool((node_graph[1:] < node_graph[:-1]).any()) or bool(
        (edge_graph[1:] < edge_graph[:-1]).any()
    ):
        raise ValueError("nodes and edges must be grouped by graph (as PyG batches them)")
    if bool((node_graph[edge_index[1]] != edge_graph).any()):
        raise ValueError("an edge joins two graphs of the batch")
    out = GraphBatch(
        x=x,
        edge_index=edge_index,
        edge_attr=edge_attr.to(torch.float32),
        node_graph=node_graph,
        edge_graph=edge_graph,
        n_nodes=torch.bincount(node_graph, minlength=int(n_graphs)),
        n_edges=torch.bincount(edge_graph, minlength=int(n_graphs)),
    )
    pos = getattr(data, "pos", None)
    if pos is not None:
        out.pos = pos.to(torch.float32)
    z = getattr(data, "z", None)
    if z is not None:
        out.z = z.to(torch.int64)
    shift = getattr(data, "edge_vec_shift", None)
    if shift is not None:
        out.edge_vec_shift = shift.to(torch.float32)
    return out
