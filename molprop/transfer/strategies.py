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
the pretrained artifact, so :class:`molprop.inference.Predictor` can rebuild them.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from molprop.errors import ArtifactError, ConfigError
from molprop.featurize.molgraph import MolGraph
from molprop.models.artifact import load_config, load_members, load_state_strict
from molprop.models.config import ArtifactConfig, ModelConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import forward_members
from molprop.pipelines.training import predict_targets

log = logging.getLogger(__name__)

STRATEGIES = ("full", "freeze-encoder", "label-augment", "embed-augment")
AUGMENT_KIND = {"label-augment": "label", "embed-augment": "embed"}
#: sub-directory of a fine-tuned artifact holding the pretrained artifact it needs
PRETRAINED_SUBDIR = "pretrained"
LOADED_PARTS = ("encoder", "readout")


def check_strategy(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    return strategy


@dataclass(frozen=True)
class Augmentation:
    """How a fine-tuned model's extra inputs are made: ``kind`` label|embed, the pretrained
    artifact sub-directory, and the (A,) standardisation stats fitted on the training set."""

    kind: str
    source: str
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Augmentation:
        return cls(str(data["kind"]), str(data["source"]), tuple(data["mean"]), tuple(data["std"]))

    def standardise(self, raw: np.ndarray) -> np.ndarray:
        return (raw - np.asarray(self.mean)) / np.asarray(self.std)


class PretrainedSource:
    """A loaded pretrained artifact that produces augmentation inputs."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.config: ArtifactConfig = load_config(self.directory)
        self.members = load_members(self.directory, self.config)
        self._nested: PretrainedSource | None = None

    @property
    def target_names(self) -> list[str]:
        return list(self.config.task.target_names)

    def _extra(self, graphs: Sequence[MolGraph]) -> np.ndarray | None:
        """The source's own augmentation inputs, if it is itself an augmented model."""
        spec = self.config.extra.get("augment")
        if not spec:
            return None
        aug = Augmentation.from_dict(spec)
        if self._nested is None:
            self._nested = PretrainedSource(self.directory / aug.source)
        return aug.standardise(raw_features(aug.kind, self._nested, graphs))

    def low_predictions(self, graphs: Sequence[MolGraph]) -> np.ndarray:
        """-> (n, T_low) ensemble-mean predictions in low-fidelity target units."""
        preds = predict_targets(self.members, graphs, self.config.task, self._extra(graphs))
        return preds.mean(0)

    def embeddings(self, graphs: Sequence[MolGraph]) -> np.ndarray:
        """-> (n, D) graph embedding of member 0 (before its head)."""
        return forward_members(self.members[:1], graphs, embed=True)[0]


def raw_features(
    kind: str,
    source: PretrainedSource,
    graphs: Sequence[MolGraph],
    measured_low: np.ndarray | None = None,
) -> np.ndarray:
    """-> (n, A) unstandardised augmentation inputs.

    ``measured_low`` (n, T_low), transductive label augmentation only: used where finite, the
    pretrained prediction elsewhere. Pass ``None`` (inductive) and measured labels are never used.
    """
    if kind == "embed":
        return source.embeddings(graphs)
    if kind != "label":
        raise ConfigError(f"unknown augmentation kind {kind!r}")
    pred = source.low_predictions(graphs)
    if measured_low is None:
        return pred
    measured = np.asarray(measured_low, dtype=np.float64).reshape(pred.shape)
    ok = np.isfinite(measured)
    if (~ok).any():
        log.warning("%d low-fidelity label(s) missing: predictions used", int((~ok).sum()))
    return np.where(ok, measured, pred)


def fit_augmentation(kind: str, raw_train: np.ndarray) -> Augmentation:
    mean = raw_train.mean(axis=0)
    std = raw_train.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)
    return Augmentation(kind, PRETRAINED_SUBDIR, tuple(map(float, mean)), tuple(map(float, std)))


def augmentation_features(spec: dict, directory: str | Path, graphs: Sequence[MolGraph],
                          source: PretrainedSource | None = None) -> np.ndarray:  # fmt: skip
    """Prediction-time inputs of a fine-tuned augmented artifact in ``directory`` (pretrained
    predictions, never measured labels)."""
    aug = Augmentation.from_dict(spec)
    source = source or PretrainedSource(Path(directory) / aug.source)
    return aug.standardise(raw_features(aug.kind, source, graphs))


def finetune_model_config(pretrained: ModelConfig, n_tasks: int, task_type: str,
                          n_extra: int) -> ModelConfig:  # fmt: skip
    return replace(pretrained, n_tasks=n_tasks, task_type=task_type, n_extra=n_extra)


def needs_fresh_head(strategy: str, pretrained: ArtifactConfig, target_names: Sequence[str],
                     task_type: str) -> bool:  # fmt: skip
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
    model = MolPropModel(config)
    if not fresh_head:
        load_state_strict(model, state, origin)
        return model
    known = tuple(f"{p}." for p in (*LOADED_PARTS, "head"))
    stray = sorted(k for k in state if not k.startswith(known))
    if stray:
        raise ArtifactError(f"weights in {origin} do not match the model: unexpected keys {stray}")
    for part in LOADED_PARTS:
        prefix = f"{part}."
        sub = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
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
