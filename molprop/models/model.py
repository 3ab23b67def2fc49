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
    """ESA (edge tokens) or NSA (node tokens) property model, built from a :class:`ModelConfig`.

    Shapes: ``forward(batch)`` -> (B, n_tasks) standardised values or logits;
    ``embed(batch)`` -> (B, embedding_dim) graph embedding before the head.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        encoder_pattern, decoder_pattern = parse_layers(config.layers)
        mab = dict(
            heads=config.heads,
            mlp_mult=config.mlp_mult,
            mlp_kind=config.mlp_kind,
            pre_ln=config.pre_ln,
            dropout=config.dropout,
            attn_dropout=config.attn_dropout,
        )
        self.encoder = SetEncoder(
            config.token_kind,
            config.node_dim,
            config.edge_dim,
            config.hidden_dim,
            encoder_pattern,
            config.learnable_rbf,
            config.rbf_cutoff,
            **mab,
        )
        self.readout = AttentionReadout(
            config.hidden_dim,
            config.num_seeds,
            decoder_pattern,
            config.size_path,
            config.size_linear,
            **mab,
        )
        self.head = PredictionHead(
            self.readout.out_dim + config.n_extra,
            config.head_hidden,
            config.n_tasks,
            config.dropout,
        )

    @property
    def embedding_dim(self) -> int:
        return self.readout.out_dim

    def embed(self, batch: GraphBatch) -> torch.Tensor:
        h, tokens = self.encoder(batch)
        return self.readout(h, tokens, batch)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        emb = self.embed(batch)
        if self.config.n_extra:
            if batch.extra is None or batch.extra.shape[-1] != self.config.n_extra:
                raise ValueError(f"model expects {self.config.n_extra} extra features per graph")
            emb = torch.cat([emb, batch.extra.to(emb.dtype)], dim=-1)
        return self.head(emb)
