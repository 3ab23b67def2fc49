"""Low -> high fidelity transfer learning: fidelity splits, fine-tuning strategies, datasets.

The choices are ``Literal`` types, here without torch so the CLI can list them cheaply:
:data:`StrategyName` names a fine-tuning strategy (each one a class of
:mod:`molprop.transfer.strategies`, looked up by :func:`~molprop.transfer.strategies.get_strategy`),
:data:`Mode` says where a label strategy's low-fidelity input comes from.
"""

from typing import Literal, get_args

#: the fine-tuning strategies, as the CLI spells them (``molprop finetune --strategy``)
StrategyName = Literal[
    "full",
    "freeze-encoder",
    "label-augment",
    "embed-augment",
    "delta",
    "delta-measured",
]
STRATEGIES: tuple[StrategyName, ...] = get_args(StrategyName)

#: ``transductive``: measured low labels are inputs (also at prediction); ``inductive``: the
#: pretrained model's predictions are, and measured low labels of the targets are never read
Mode = Literal["transductive", "inductive"]
MODES: tuple[Mode, ...] = get_args(Mode)

__all__ = ["MODES", "STRATEGIES", "Mode", "StrategyName"]
