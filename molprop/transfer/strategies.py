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

Each strategy is a small class (:class:`Strategy` and its subclasses) whose attributes say
what it needs and does -- what it appends (``augment``), whether the model has a linear skip,
whether the head sees ``x``, whether the encoder is frozen, whether it is inductive only,
whether its training labels come from measured low labels -- and whose methods build the
fine-tuned model's config and initialise its skip. :data:`REGISTRY` holds one per
:data:`~molprop.transfer.StrategyName`; :func:`get_strategy` looks one up by name.

The head is re-initialised (encoder + readout loaded strictly) whenever its shape or meaning
changes: new target names, a new task type, or an augmentation strategy. Otherwise the whole
state is loaded strictly. Augmentation features are standardised with training-set statistics
that the fine-tuned artifact stores (``config.json`` ``extra.augment``) together with a copy of
the pretrained artifact, so :class:`molprop.inference.Predictor` can rebuild them (see
:mod:`molprop.inference.augment`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar, cast

import numpy as np
import torch
from torch import nn

from molprop.artifact.config import ArtifactConfig, AugmentKind
from molprop.errors import ConfigError
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.transfer import STRATEGIES, Mode, StrategyName

log = logging.getLogger(__name__)


class Strategy:
    """A fine-tuning strategy: plain ``full`` fine-tuning unless a subclass says otherwise.

    The class attributes are what the fine-tune asks of a strategy: ``augment`` what is
    appended to the graph embedding (and/or mapped by the skip; None: nothing), ``linear_skip``
    whether the model has the linear skip (``ModelConfig.extra_skip``), ``extra_to_head``
    whether the head sees the augmentation input (Δ strategies: the skip alone does),
    ``freezes_encoder`` whether the encoder stays frozen throughout, ``inductive_only`` whether
    the strategy is defined in inductive mode only, ``measured_targets`` whether the training
    split's labels are made from its measured low labels (:func:`measured_residual_targets`)."""

    name: ClassVar[StrategyName]
    augment: ClassVar[AugmentKind | None] = None
    linear_skip: ClassVar[bool] = False
    extra_to_head: ClassVar[bool] = True
    freezes_encoder: ClassVar[bool] = False
    inductive_only: ClassVar[bool] = False
    measured_targets: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def can_keep_head(self) -> bool:
        """Whether the pretrained head can be reused (``--keep-head``): no augmentation."""
        return self.augment is None

    def check_mode(self, mode: Mode) -> None:
        """:class:`ConfigError` unless the strategy is defined in ``mode``."""
        if mode != "inductive" and self.inductive_only:
            raise ConfigError(
                f"strategy {self.name!r} is inductive only (--mode inductive): in {mode} mode "
                "the input x is the measured low label itself, so it would be plain 'delta'"
            )

    def reads_measured_low(self, mode: Mode) -> bool:
        """True when the model is trained on (and will predict from) measured low labels."""
        return self.augment == "label" and mode == "transductive"

    def model_config(self, pretrained: ModelConfig, n_tasks: int, n_extra: int) -> ModelConfig:
        """The fine-tuned model: the pretrained architecture with the new outputs and the
        strategy's extra inputs (appended to the head; Δ strategies: skip only)."""
        return replace(
            pretrained,
            n_tasks=n_tasks,
            n_extra=n_extra,
            extra_to_head=self.extra_to_head,
            extra_skip=self.linear_skip and n_extra > 0,
        )

    def init_skip(self, model: MolPropModel, weights: np.ndarray, bias: np.ndarray) -> MolPropModel:
        """Set the skip layer to the linear fit ``weights``, ``bias`` (then
        :meth:`_after_skip`: what the strategy does with it)."""
        if model.skip is None:
            raise ConfigError(f"strategy {self.name!r} needs a model with a linear skip")
        with torch.no_grad():
            model.skip.weight.copy_(torch.as_tensor(weights, dtype=model.skip.weight.dtype))
            model.skip.bias.copy_(torch.as_tensor(bias, dtype=model.skip.bias.dtype))
        self._after_skip(model)
        return model

    def _after_skip(self, model: MolPropModel) -> None:
        """What follows setting the skip to the fit (nothing here)."""

    def needs_fresh_head(
        self,
        pretrained: ArtifactConfig,
        target_names: Sequence[str],
        task_type: str,
        keep_head: bool = False,
    ) -> bool:
        """True when the head is re-initialised. ``keep_head``: reuse the pretrained head
        under new target names (same number of targets and task type, no augmentation), else
        :class:`ConfigError`."""
        if keep_head:
            if (
                not self.can_keep_head
                or len(target_names) != len(pretrained.task.target_names)
                or task_type != pretrained.task.task_type
            ):
                raise ConfigError(
                    f"--keep-head needs the pretrained task's shape "
                    f"({len(pretrained.task.target_names)} {pretrained.task.task_type} "
                    f"target(s)) and a strategy without augmentation; got {len(target_names)} "
                    f"{task_type} target(s), strategy {self.name!r}"
                )
            return False
        return (
            not self.can_keep_head
            or tuple(target_names) != tuple(pretrained.task.target_names)
            or task_type != pretrained.task.task_type
        )


class Full(Strategy):
    """Every weight trains from the pretrained values."""

    name = "full"


class FreezeEncoder(Strategy):
    """Encoder frozen (:func:`freeze_encoder`); readout and head train."""

    name = "freeze-encoder"
    freezes_encoder = True


class LabelAugment(Strategy):
    """The low label ``x`` goes to the head and through a trained linear skip; the head's last
    layer starts at zero, so the model starts at the linear fit."""

    name = "label-augment"
    augment = "label"
    linear_skip = True

    def _after_skip(self, model: MolPropModel) -> None:
        with torch.no_grad():
            last = cast(nn.Linear, model.head.net[-1])
            last.weight.zero_()
            last.bias.zero_()


class EmbedAugment(Strategy):
    """The pretrained model's graph embedding goes to the head."""

    name = "embed-augment"
    augment = "embed"


class Delta(Strategy):
    """Δ-learning: a frozen skip holds the linear fit of ``x``; the network (which never sees
    ``x``) learns the residual."""

    name: ClassVar[StrategyName] = "delta"
    augment = "label"
    linear_skip = True
    extra_to_head = False

    def _after_skip(self, model: MolPropModel) -> None:
        assert model.skip is not None
        model.skip.requires_grad_(False)


class DeltaMeasured(Delta):
    """``delta`` whose training labels use the training molecules' measured low labels
    (inductive only)."""

    name = "delta-measured"
    inductive_only = True
    measured_targets = True


#: one strategy per :data:`~molprop.transfer.StrategyName`
REGISTRY: dict[StrategyName, Strategy] = {
    s.name: s
    for s in (Full(), FreezeEncoder(), LabelAugment(), EmbedAugment(), Delta(), DeltaMeasured())
}


def get_strategy(name: str, mode: Mode | None = None) -> Strategy:
    """The strategy called ``name`` (and defined in ``mode``, when given), else
    :class:`ConfigError`."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {STRATEGIES}")
    strategy = REGISTRY[name]
    if mode is not None:
        strategy.check_mode(mode)
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


def freeze_encoder(model: MolPropModel) -> MolPropModel:
    """Freeze ``model.encoder``: no gradients, and eval mode (dropout off); the trainer keeps a
    frozen encoder in eval mode (:meth:`molprop.training.lightning_module.LitMolProp.train`)."""
    model.encoder.requires_grad_(False)
    model.encoder.eval()
    return model


def unfreeze_encoder(model: MolPropModel) -> MolPropModel:
    """Undo :func:`freeze_encoder`: the encoder's weights take gradients again."""
    model.encoder.requires_grad_(True)
    return model
