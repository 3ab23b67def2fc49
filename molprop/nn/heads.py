"""Prediction head: graph embedding (+ optional extra features) -> one output per task.

Regression heads predict standardised targets; classification heads predict logits
(binary / multilabel, trained with BCE-with-logits). Missing labels are masked in the loss.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import nn

#: What a head predicts: standardised values (regression) or logits (classification).
TaskType = Literal["regression", "classification"]
TASK_TYPES: tuple[str, ...] = get_args(TaskType)
#: Regression losses on standardised targets: squared, absolute, Huber (delta 1).
RegressionLoss = Literal["mse", "mae", "huber"]
REGRESSION_LOSSES: tuple[str, ...] = get_args(RegressionLoss)


class PredictionHead(nn.Module):
    """Linear-GELU-Dropout-Linear from the graph embedding (+ extra features) to one output
    per task.

    Shapes:
        embedding: (B, in_dim) -> (B, n_tasks) standardised values (regression) or logits
    """

    def __init__(self, in_dim: int, hidden: int, n_tasks: int, dropout: float = 0.0):
        super().__init__()
        self.in_dim = in_dim
        self.n_tasks = n_tasks
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, n_tasks)
        )

    def forward(self, embedding: torch.Tensor) -> torch.Tensor:
        return self.net(embedding)


def masked_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    task_type: TaskType,
    loss: RegressionLoss = "mse",
) -> torch.Tensor:
    """Mean loss over labelled entries only: BCE with logits (classification) or ``loss``
    (regression: squared error, absolute error or Huber with delta 1). pred/target/mask: (B, T)
    -> scalar."""
    if task_type == "classification":
        per = F.binary_cross_entropy_with_logits(pred, target, reduction="none")
    elif loss == "mae":
        per = F.l1_loss(pred, target, reduction="none")
    elif loss == "huber":
        per = F.huber_loss(pred, target, reduction="none", delta=1.0)
    elif loss == "mse":
        per = F.mse_loss(pred, target, reduction="none")
    else:
        raise ValueError(f"regression loss must be one of {REGRESSION_LOSSES}, got {loss!r}")
    weight = mask.to(per.dtype)
    return (per * weight).sum() / weight.sum().clamp_min(1.0)
