"""Fine-tuning strategies for a pretrained (low-fidelity) model.

- ``full``: every weight trains from the pretrained values (what the paper did).
- ``freeze-encoder``: encoder weights frozen (``requires_grad=False`` and kept in eval mode, so
  they stay bit-identical and dropout is off); readout and head train.
- ``label-augment``: the low-fidelity label is appended to the pooled graph embedding before the
  head (``ModelConfig.n_extra``): measured values in transductive mode, the pretrained model's
  predictions in inductive mode (measured labels are then never read).
  A linear skip maps it onto the output, ``y = head(emb ⊕ x) + w·x + b``: ``w, b`` start at
  the least-squares fit of the (standardised) high label on ``x`` over the training split and
  the head's last layer starts at zero, so the model starts at the linear bar and trains from
  there.
- ``embed-augment``: the pretrained model's graph embedding is appended.
- ``delta`` (Δ-learning): the network (encoder + readout from the pretrained model, a fresh
  head that does not see ``x``) learns the residual ``high − (a·x + b)``; the linear fit of the
  training split is a frozen skip layer, so it is added back in every prediction. ``x`` as for
  ``label-augment``.
- ``delta-measured`` (inductive only): ``delta``'s network and frozen skip ``a'·x + b'``
  (``x`` the pretrained prediction, out-of-fold for the training molecules), but the training
  split's labels are replaced by ``high − (a·low + b) + (a'·x + b')`` with ``(a, b)`` the
  least-squares fit of high on the training molecules' *measured* low labels
  (:func:`measured_residual_targets`): the network learns the residual of the measured-label
  fit instead of ``high − (a'·x + b')``, which is dominated by the pretrained model's own error.
  Validation labels stay the measured high labels; prediction needs no measured label (``x`` is
  made by the stored pretrained copy). Transductive mode is refused: there ``x`` is the measured
  label, so it would be plain ``delta``.

The head is re-initialised (encoder + readout loaded strictly) whenever its shape or meaning
changes: new target names, a new task type, or an augmentation strategy. Otherwise the whole
state is loaded strictly. Augmentation features are standardised with training-set statistics
that the fine-tuned artifact stores (``config.json`` ``extra.augment``) together with a copy of
the pretrained artifact, so :class:`molprop.inference.Predictor` can rebuild them (see
:mod:`molprop.inference.augment`).
"""

from __future__ import annotations

import logging
import types
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch
from torch import nn

from molprop.artifact.config import ArtifactConfig
from molprop.errors import ConfigError
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.transfer import STRATEGIES

log = logging.getLogger(__name__)

AUGMENT_KIND = {
    "label-augment": "label",
    "embed-augment": "embed",
    "delta": "label",
    "delta-measured": "label",
}
#: Δ-learning strategies: frozen linear skip, the head does not see ``x``
DELTA_STRATEGIES = ("delta", "delta-measured")
#: strategies whose model has the linear skip (``ModelConfig.extra_skip``)
SKIP_STRATEGIES = ("label-augment", *DELTA_STRATEGIES)
#: strategies defined in inductive mode only
INDUCTIVE_ONLY = ("delta-measured",)


def check_strategy(strategy: str, mode: str | None = None) -> str:
    """``strategy`` if it is known (and defined in ``mode``, when given), else
    :class:`ConfigError`."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    if mode is not None and mode != "inductive" and strategy in INDUCTIVE_ONLY:
        raise ConfigError(
            f"strategy {strategy!r} is inductive only (--mode inductive): in {mode} mode the "
            "input x is the measured low label itself, so it would be plain 'delta'"
        )
    return strategy


def measured_residual_targets(
    high: np.ndarray, low: np.ndarray, x: np.ndarray
) -> tuple[np.ndarray, dict[str, list]]:
    """``delta-measured`` training labels ``high − (a·low + b) + (a'·x + b')`` (all (n, ·),
    raw units): ``(a, b)`` the least-squares fit of ``high`` on the measured ``low``, ``(a', b')``
    that of ``high`` on ``x`` (the skip's fit), both over the given (training) rows. A row whose
    ``low`` is missing gets NaN (no label: masked out of the loss). -> (targets, the fits)."""
    high = np.asarray(high, dtype=np.float64)
    low = np.asarray(low, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    a, b = linear_fit(low, high)
    a_x, b_x = linear_fit(x, high)
    targets = high - (low @ a.T + b) + (x @ a_x.T + b_x)
    fits = {"low_weight": a.tolist(), "low_bias": b.tolist()}
    return targets, {**fits, "x_weight": a_x.tolist(), "x_bias": b_x.tolist()}


def finetune_model_config(
    pretrained: ModelConfig, n_tasks: int, n_extra: int, strategy: str = "full"
) -> ModelConfig:
    """The fine-tuned model: the pretrained architecture with the new outputs and the
    strategy's extra inputs (appended to the head; ``delta``: skip only)."""
    return replace(
        pretrained,
        n_tasks=n_tasks,
        n_extra=n_extra,
        extra_to_head=strategy not in DELTA_STRATEGIES,
        extra_skip=strategy in SKIP_STRATEGIES and n_extra > 0,
    )


def linear_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares ``y ≈ x @ W.T + b`` per output column over the rows where that column
    and every ``x`` are finite. x (n, A), y (n, T) -> (W (T, A), b (T,))."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    design = np.hstack([x, np.ones((len(x), 1))])
    weights = np.zeros((y.shape[1], x.shape[1]))
    bias = np.zeros(y.shape[1])
    for t in range(y.shape[1]):
        ok = np.isfinite(y[:, t]) & np.isfinite(x).all(axis=1)
        if ok.sum() <= x.shape[1]:
            raise ConfigError(
                f"linear fit of target {t} needs more than {x.shape[1]} labelled training "
                f"rows, got {int(ok.sum())}"
            )
        coef, *_ = np.linalg.lstsq(design[ok], y[ok, t], rcond=None)
        weights[t], bias[t] = coef[:-1], coef[-1]
    return weights, bias


def init_linear_skip(
    model: MolPropModel, weights: np.ndarray, bias: np.ndarray, strategy: str
) -> MolPropModel:
    """Set the skip layer to the linear fit. ``label-augment``: the head's last layer is
    zeroed (the model starts at the fit) and the skip trains; ``delta``: the skip is frozen
    (the network learns the residual of the fit; also ``delta-measured``)."""
    if model.skip is None:
        raise ConfigError(f"strategy {strategy!r} needs a model with a linear skip")
    with torch.no_grad():
        model.skip.weight.copy_(torch.as_tensor(weights, dtype=model.skip.weight.dtype))
        model.skip.bias.copy_(torch.as_tensor(bias, dtype=model.skip.bias.dtype))
        if strategy == "label-augment":
            last = model.head.net[-1]
            last.weight.zero_()
            last.bias.zero_()
    if strategy in DELTA_STRATEGIES:
        model.skip.requires_grad_(False)
    return model


def needs_fresh_head(
    strategy: str,
    pretrained: ArtifactConfig,
    target_names: Sequence[str],
    task_type: str,
    keep_head: bool = False,
) -> bool:
    """True when the head is re-initialised. ``keep_head``: reuse the pretrained head under
    new target names (same number of targets and task type, no augmentation), else
    :class:`ConfigError`."""
    if keep_head:
        if (
            strategy in AUGMENT_KIND
            or len(target_names) != len(pretrained.task.target_names)
            or task_type != pretrained.task.task_type
        ):
            raise ConfigError(
                f"--keep-head needs the pretrained task's shape ({len(pretrained.task.target_names)}"
                f" {pretrained.task.task_type} target(s)) and a strategy without augmentation; "
                f"got {len(target_names)} {task_type} target(s), strategy {strategy!r}"
            )
        return False
    return (
        strategy in AUGMENT_KIND
        or tuple(target_names) != tuple(pretrained.task.target_names)
        or task_type != pretrained.task.task_type
    )


def _train_frozen(self: nn.Module, mode: bool = True) -> nn.Module:
    return nn.Module.train(self, False)


def unfreeze_encoder(model: MolPropModel) -> MolPropModel:
    """Undo :func:`freeze_encoder`: the encoder trains again (gradients, train mode)."""
    for p in model.encoder.parameters():
        p.requires_grad_(True)
    model.encoder.__dict__.pop("train", None)
    return model


def freeze_encoder(model: MolPropModel) -> MolPropModel:
    """Freeze ``model.encoder``: no gradients, and it stays in eval mode (dropout off) even when
    Lightning calls ``model.train()``."""
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    model.encoder.train = types.MethodType(_train_frozen, model.encoder)  # type: ignore[method-assign]
    model.encoder.eval()
    return model
