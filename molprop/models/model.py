"""MolPropModel = encoder (tokens + attention blocks) -> readout (PMA + size path) -> head."""

from __future__ import annotations

import torch
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.models.config import ModelConfig, parse_layers
from molprop.nn.encoder import SetEncoder
from molprop.nn.heads import PredictionHead
from molprop.nn.readout import AttentionReadout


class MolPropModel(nn.Module):
    """ESA (edge tokens) or NSA (node tokens) property model, composed of a
    :class:`SetEncoder`, an :class:`AttentionReadout` and a :class:`PredictionHead`; build one
    from a :class:`ModelConfig` with :meth:`from_config` (the usual way; ``config`` then holds it,
    else None). The head's input beyond the readout's embedding (``n_extra``) takes per-graph
    extra features (``batch.extra``: label / embedding augmentation).

    Shapes: ``forward(batch)`` -> (B, n_tasks) standardised values or logits;
    ``embed(batch)`` -> (B, embedding_dim) graph embedding before the head.
    """

    config: ModelConfig | None

    def __init__(self, encoder: SetEncoder, readout: AttentionReadout, head: PredictionHead):
        super().__init__()
        if encoder.dim != readout.dim:
            raise ValueError(f"encoder width {encoder.dim} != readout width {readout.dim}")
        if head.in_dim < readout.out_dim:
            raise ValueError(f"head input {head.in_dim} < readout output {readout.out_dim}")
        self.encoder = encoder
        self.readout = readout
        self.head = head
        self.config = None

    @classmethod
    def from_config(cls, config: ModelConfig) -> MolPropModel:
        """The model ``config`` describes (parameters created, hence initialised from the torch
        RNG, in the order encoder, readout, head)."""
        encoder_pattern, decoder_pattern = parse_layers(config.layers)
        block = config.block
        encoder = SetEncoder(
            config.token_kind,
            config.node_dim,
            config.edge_dim,
            config.hidden_dim,
            encoder_pattern,
            block,
            learnable_rbf=config.learnable_rbf,
            rbf_cutoff=config.rbf_cutoff,
            pair_rbf=config.pair_rbf,
        )
        readout = AttentionReadout(
            config.hidden_dim,
            config.num_seeds,
            decoder_pattern,
            block,
            size_path=config.size_path,
            size_linear=config.size_linear,
        )
        head = PredictionHead(
            readout.out_dim + config.n_extra, config.head_hidden, config.n_tasks, config.dropout
        )
        model = cls(encoder, readout, head)
        model.config = config
        return model

    @property
    def embedding_dim(self) -> int:
        return self.readout.out_dim

    @property
    def n_extra(self) -> int:
        """Per-graph extra features the head takes after the embedding."""
        return self.head.in_dim - self.readout.out_dim

    @property
    def n_tasks(self) -> int:
        return self.head.n_tasks

    def embed(self, batch: GraphBatch) -> torch.Tensor:
        h, tokens = self.encoder(batch)
        return self.readout(h, tokens, batch)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        emb = self.embed(batch)
        if self.n_extra:
            if batch.extra is None or batch.extra.shape[-1] != self.n_extra:
                raise ValueError(f"model expects {self.n_extra} extra features per graph")
            emb = torch.cat([emb, batch.extra.to(emb.dtype)], dim=-1)
        return self.head(emb)
