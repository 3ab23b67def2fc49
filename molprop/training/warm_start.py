"""Start a model from a trained artifact's weights (``molprop train --init``, ``molprop
finetune``): the architecture, featuriser and encoder + readout weights come from the artifact,
the head is the new task's.

:func:`init_from_pretrained` is the one weight-loading routine of both; :class:`InitSource`
is a trained artifact opened as a starting point for a new task, with the checks that the
new run's explicit settings agree with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

from molprop.artifact import Artifact
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.store import load_state_strict
from molprop.errors import ArtifactError, ConfigError
from molprop.featurize import FeaturizerConfig
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel

#: the parts of a model loaded from the starting artifact when the head is fresh
LOADED_PARTS = ("encoder", "readout")
#: ``ModelConfig`` fields that describe the new task's outputs, not the loaded architecture
TASK_FIELDS = ("n_tasks", "n_extra", "extra_to_head", "extra_skip")


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
    known = tuple(f"{p}." for p in (*LOADED_PARTS, "head", "skip"))
    stray = sorted(k for k in state if not k.startswith(known))
    if stray:
        raise ArtifactError(f"weights in {origin} do not match the model: unexpected keys {stray}")
    for part in LOADED_PARTS:
        prefix = f"{part}."
        sub = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        load_state_strict(getattr(model, part), sub, f"{origin} [{part}]")
    return model


def model_conflicts(config: ModelConfig, overrides: Mapping[str, Any]) -> list[str]:
    """The ``overrides`` keys (``ModelConfig`` fields) whose value differs from ``config``'s;
    an unknown key is a conflict too."""
    known = {f.name for f in fields(ModelConfig)}
    return [k for k, v in overrides.items() if k not in known or getattr(config, k) != v]


@dataclass(frozen=True)
class InitSource:
    """A trained artifact as the starting point of a new task: ``directory`` and its
    ``config``. Open one with :meth:`open` (a model name or a directory)."""

    directory: Path
    config: ArtifactConfig

    @classmethod
    def open(cls, name_or_path: str | Path) -> InitSource:
        artifact = Artifact.open(name_or_path)
        return cls(artifact.directory, artifact.read_config())

    def featurizer(self, requested: FeaturizerConfig) -> FeaturizerConfig:
        """The artifact's featuriser; ``requested`` must be the default or the same."""
        own = self.config.featurizer
        if requested != FeaturizerConfig() and requested != own:
            raise ConfigError(
                f"featurizer {requested.kind} {requested.params} conflicts with the init "
                f"artifact {self.directory}, which uses {own.kind} {own.params}: drop the "
                "featurizer settings (the init artifact's are used)"
            )
        return own

    def model_config(
        self, n_tasks: int, overrides: Mapping[str, Any], node_dim: int, edge_dim: int
    ) -> ModelConfig:
        """The artifact's architecture with ``n_tasks`` fresh outputs and no extra inputs.
        ``overrides`` (settings the caller asked for) must agree with it (else
        :class:`ConfigError` naming them), and so must the data's feature widths."""
        own = self.config.model
        bad = model_conflicts(own, overrides)
        if bad:
            given = ", ".join(
                f"{k}={overrides[k]!r} (init: {getattr(own, k, None)!r})" for k in bad
            )
            raise ConfigError(
                f"model settings conflict with the init artifact {self.directory}: {given}; "
                "the architecture comes from the init artifact: drop them"
            )
        if (node_dim, edge_dim) != (own.node_dim, own.edge_dim):
            raise ConfigError(
                f"the data's features ({node_dim} node, {edge_dim} edge) differ from the init "
                f"artifact's ({own.node_dim}, {own.edge_dim}): featurised differently"
            )
        return replace(own, n_tasks=n_tasks, n_extra=0, extra_to_head=True, extra_skip=False)

    def member(self, config: ModelConfig, m: int, seed: int) -> MolPropModel:
        """Member ``m`` of the new ensemble: encoder + readout of the artifact's member
        ``m mod n_members``, a fresh head initialised from ``seed``."""
        source, i = Artifact(self.directory), m % self.config.n_members
        state, origin = source.read_member_weights(i), str(source.member_path(i))
        return init_from_pretrained(config, state, origin, True, seed)


__all__ = ["LOADED_PARTS", "InitSource", "init_from_pretrained", "model_conflicts"]
