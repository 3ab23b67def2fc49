"""molprop's ESA / NSA encoder as a module of your own PyTorch Geometric model.

:class:`PyGEncoder` is the encoder and attention readout of a :class:`MolPropModel` (the same
modules, no model code of its own) on a PyG ``Batch``: the batch becomes the model's
:class:`~molprop.data.batch.GraphBatch` (:func:`~molprop.data.pyg.graph_batch_from_pyg`), so a
PyG batch and molprop's own collation of the same molecules give the same embeddings. A whole
:class:`MolPropModel`, head included, runs on a PyG batch as
``model(graph_batch_from_pyg(batch))``.

Nothing here imports ``torch_geometric`` (the optional extra ``molprop[pyg]``); graphs become
PyG ``Data`` with :meth:`molprop.graph.MolGraph.to_pyg`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from molprop.data.pyg import graph_batch_from_pyg
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.nn.edge_sets import TokenKind, TokenSet
from molprop.nn.encoder import SetEncoder
from molprop.nn.readout import AttentionReadout


class PyGEncoder(nn.Module):
    """ESA (edge tokens) or NSA (node tokens) encoder + attention readout on PyG batches.

    Build a new one with :meth:`create` (or :meth:`from_config`), or wrap a trained model's
    with :meth:`from_model`. ``forward`` gives one embedding per graph (what
    :meth:`MolPropModel.embed` gives, the head's input); :meth:`encode` the encoder's token
    states before the readout.

    Shapes: ``forward(data)``: PyG ``Batch`` of B graphs (x (N, node_dim), edge_index (2, E),
    edge_attr (E, edge_dim), batch (N,); pos (N, 3) and z (N,) for 3D options) ->
    (B, out_dim); ``encode(data)`` -> (L, dim) token states and their TokenSet
    """

    def __init__(self, encoder: SetEncoder, readout: AttentionReadout):
        super().__init__()
        if encoder.dim != readout.dim:
            raise ValueError(f"encoder width {encoder.dim} != readout width {readout.dim}")
        self.encoder = encoder
        self.readout = readout

    @classmethod
    def create(
        cls, node_dim: int, edge_dim: int, token_kind: TokenKind = "esa", **options: Any
    ) -> PyGEncoder:
        """A new encoder for inputs of these widths; ``options``: any architecture field of
        :class:`ModelConfig` (``hidden_dim``, ``layers``, ``heads``, ``num_seeds``,
        ``token_scheme``, ``size_path``, ...; its defaults otherwise). NSA reads no edge
        features (``edge_dim`` is then only checked to be positive)."""
        config = ModelConfig(node_dim, edge_dim, 1, token_kind=token_kind, **options)
        return cls.from_config(config)

    @classmethod
    def from_config(cls, config: ModelConfig) -> PyGEncoder:
        """The encoder and readout of ``MolPropModel.from_config(config)`` (so the same weights
        under the same torch seed); the head, and with it ``n_tasks``, is dropped."""
        return cls.from_model(MolPropModel.from_config(config))

    @classmethod
    def from_model(cls, model: MolPropModel) -> PyGEncoder:
        """The encoder and readout of ``model`` (shared, not copied: training one trains the
        other), e.g. a shipped model's member,
        ``Predictor.from_pretrained("solubility").members[0]``."""
        return cls(model.encoder, model.readout)

    @property
    def out_dim(self) -> int:
        """Width of the graph embedding (``forward``'s last dimension)."""
        return self.readout.out_dim

    @property
    def dim(self) -> int:
        """Width of the token states (``encode``'s last dimension)."""
        return self.encoder.dim

    def forward(self, data: Any) -> torch.Tensor:
        """(B, out_dim) graph embeddings of a PyG ``Batch`` (or one ``Data``)."""
        batch = graph_batch_from_pyg(data)
        h, tokens = self.encoder(batch)
        return self.readout(h, tokens, batch)

    def encode(self, data: Any) -> tuple[torch.Tensor, TokenSet]:
        """The encoder's state of every token, one row per token, grouped by graph, and their
        :class:`TokenSet` (``tokens.graph``: the graph of each row; ``tokens.pad(states)``:
        the (B, L_max, dim) layout).

        NSA: one row per node, in ``data.x``'s order. ESA (``directed``): one row per edge, in
        ``data.edge_index``'s order, except that each atom without edges adds a self-loop token
        after its graph's edges; ``undirected``: one row per bond (the direction src < dst).
        """
        batch = graph_batch_from_pyg(data)
        h, tokens = self.encoder(batch)
        return h[tokens.graph, tokens.position], tokens
