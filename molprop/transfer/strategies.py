"""Fine-tuning strategies for a pretrained (low-fidelity) model.

- ``full``: every weight trains from the pretrained values (what the paper did).
- ``freeze-encoder``: encoder weights frozen (``requires_grad=False`` and kept in eval mode, so
  they stay bit-identical and dropout is off); readout and head train.
- ``label-augment``: the low-fidelity label is appended to the pooled graph embedding before the
  head (``ModelConfig.n_extra``): measured values in transductive mode, the pretrained model's
  predictions in inductive mode (measured labels are then never read).
- ``embed-augment``: the pretrained model's graph embedding is appended.

The head is re-initialised (encoder + readout loaded strictly) whenever its shape or meaning
changes: new target names, a new task type, or an augmentation strategy. Otherwise the whole
state is loaded strictly. Augmentation features are standardised with training-set statistics
that the fine-tuned artifact stores (``config.json`` ``extra.augment``) together with a copy of
the pretrained artifact, so :class:`molprop.inference.Predictor` can rebuild them (see
:mod:`molprop.artifact.augment`).
"""

from __future__ import annotations

import logging
import types
from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from molprop.artifact.config import ArtifactConfig
from molprop.artifact.store import load_state_strict
from molprop.errors import ArtifactError, ConfigError
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel

log = logging.getLogger(__name__)

STRATEGIES = ("full", "freeze-encoder", "label-augment", "embed-augment")
AUGMENT_KIND = {"label-augment": "label", "embed-augment": "embed"}
LOADED_PARTS = ("encoder", "readout")


def check_strategy(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    return strategy


def finetune_model_config(pretrained: ModelConfig, n_tasks: int, n_extra: int) -> ModelConfig:
    return replace(pretrained, n_tasks=n_tasks, n_extra=n_extra)


def needs_fresh_head(
    strategy: str, pretrained: ArtifactConfig, target_names: Sequence[str], task_type: str
) -> bool:
    return (
        strategy in AUGMENT_KIND
        or tuple(target_names) != tuple(pretrained.task.target_names)
        or task_type != pretrained.task.task_type
    )


def init_from_pretrained(
    config: ModelConfig,
    state: dict[str, torch.Tensor],
    origin: str,
    fresh_head: bool,
    seed: int,
) -> MolPropModel:
    """New model with pretrained weights: all of them (strict), or encoder + readout (each
    strict) with a freshly initialised head. Mismatched keys raise :class:`ArtifactError`."""
    torch.manual_seed(seed)
    model = MolPropModel.from_config(config)
    if not fresh_head:
        load_state_strict(model, state, origin)
        return model
    known = tuple(f"{p}." for p in (*LOADED_PARTS, "head"))
    stray = sorted(k for k in state if not k.startswith(known))
    if stray:
        raise ArtifactError(f"weights in {origin} do not match the model: unexpected keys {stray}")
    for part in LOADED_PARTS:
        prefix = f"{part}."
        sub = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        load_state_strict(getattr(model, part), sub, f"{origin} [{part}]")
    return model


def _train_frozen(self: nn.Module, mode: bool = True) -> nn.Module:
    return nn.Module.train(self, False)


def freeze_encoder(model: MolPropModel) -> MolPropModel:
    """Freeze ``model.encoder``: no gradients, and it stays in eval mode (dropout off) even when
    Lightning calls ``model.train()``."""
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    model.encoder.train = types.MethodType(_train_frozen, model.encoder)  # type: ignore[method-assign]
    model.encoder.eval()
    return model
