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
    else None). Per-graph extra features (``batch.extra``, ``n_extra`` of them: label /
    embedding augmentation) are appended to the head's input (when the head is wider than the
    readout's embedding) and/or mapped linearly onto the output by ``skip`` (an
    ``nn.Linear(n_extra, n_tasks)``, or None).

    Shapes: ``forward(batch)`` -> (B, n_tasks) standardised values or logits;
    ``embed(batch)`` -> (B, embedding_dim) graph embedding before the head.
    """

    config: ModelConfig | None

    def __init__(
        self,
        encoder: SetEncoder,
        readout: AttentionReadout,
        head: PredictionHead,
        skip: nn.Linear | None = None,
    ):
        super().__init__()
        if encoder.dim != readout.dim:
            raise ValueError(f"encoder width {encoder.dim} != readout width {readout.dim}")
        if head.in_dim < readout.out_dim:
            raise ValueError(f"head input {head.in_dim} < readout output {readout.out_dim}")
        self.encoder = encoder
        self.readout = readout
        self.head = head
        if skip is not None and skip.out_features != head.n_tasks:
            raise ValueError(f"skip maps to {skip.out_features} outputs, head {head.n_tasks}")
        self.skip = skip
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
            token_scheme=config.token_scheme,
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
        head_extra = config.n_extra if config.extra_to_head else 0
        head = PredictionHead(
            readout.out_dim + head_extra, config.head_hidden, config.n_tasks, config.dropout
        )
        skip = nn.Linear(config.n_extra, config.n_tasks) if config.extra_skip else None
        model = cls(encoder, readout, head, skip)
        model.config = config
        return model

    @property
    def embedding_dim(self) -> int:
        return self.readout.out_dim

    @property
    def n_extra(self) -> int:
        """Per-graph extra features the model takes (head input and/or skip)."""
        if self.skip is not None:
            return self.skip.in_features
        return self.head.in_dim - self.readout.out_dim

    @property
    def n_tasks(self) -> int:
        return self.head.n_tasks

    def embed(self, batch: GraphBatch) -> torch.Tensor:
        h, tokens = self.encoder(batch)
        return self.readout(h, tokens, batch)

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        return self.head_of(self.embed(batch), batch.extra)

    def head_of(self, emb: torch.Tensor, extra: torch.Tensor | None) -> torch.Tensor:
        """(B, embedding_dim) embeddings (+ (B, n_extra) extra features) -> (B, n_tasks)."""
        if not self.n_extra:
            return self.head(emb)
        if extra is None or extra.shape[-1] != self.n_extra:
            raise ValueError(f"model expects {self.n_extra} extra features per graph")
        extra = extra.to(emb.dtype)
        if self.head.in_dim > self.readout.out_dim:
            emb = torch.cat([emb, extra], dim=-1)
        out = self.head(emb)
        return out if self.skip is None else out + self.skip(extra)
