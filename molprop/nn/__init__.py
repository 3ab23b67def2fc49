"""Attention-based graph layers: token sets and masks, MAB/SAB/PMA, encoder, readout, head.

Every public module documents its tensor shapes in a ``Shapes:`` section of its docstring
(checked by ``tests/unit/nn/test_shapes_docstrings.py``).
"""

from molprop.nn.attention import MAB, MLP, PMA, BlockConfig, MultiHeadAttention
from molprop.nn.distance_basis import LearnableGaussianBasis
from molprop.nn.edge_sets import TokenSet, edge_token_set, node_token_set, token_set
from molprop.nn.encoder import SetEncoder
from molprop.nn.heads import PredictionHead, masked_loss
from molprop.nn.readout import AttentionReadout

__all__ = [
    "MAB",
    "MLP",
    "PMA",
    "BlockConfig",
    "MultiHeadAttention",
    "LearnableGaussianBasis",
    "TokenSet",
    "edge_token_set",
    "node_token_set",
    "token_set",
    "SetEncoder",
    "AttentionReadout",
    "PredictionHead",
    "masked_loss",
]
