"""Attention-based graph layers: token sets and masks, MAB/SAB/PMA, encoder, readout, head."""

from molprop.nn.attention import MAB, MLP, PMA, MultiHeadAttention
from molprop.nn.edge_sets import TokenSet, edge_token_set, node_token_set, token_set
from molprop.nn.encoder import SetEncoder
from molprop.nn.heads import PredictionHead, masked_loss
from molprop.nn.readout import AttentionReadout

__all__ = [
    "MAB",
    "MLP",
    "PMA",
    "MultiHeadAttention",
    "TokenSet",
    "edge_token_set",
    "node_token_set",
    "token_set",
    "SetEncoder",
    "AttentionReadout",
    "PredictionHead",
    "masked_loss",
]
