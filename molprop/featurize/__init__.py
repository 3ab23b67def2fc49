"""Featurisers: parsed molecules / structures -> numpy-only :class:`MolGraph`.

A featuriser is described by a :class:`FeaturizerConfig` (stored in every artifact) and built
with :func:`build_featurizer`, so inference always rebuilds the features used in training.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from molprop.errors import ConfigError
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.featurize.molgraph import MolGraph


class Featurizer(Protocol):
    """Anything that turns one input record into a :class:`MolGraph`."""

    node_dim: int
    edge_dim: int

    def from_smiles(self, smiles: str) -> MolGraph: ...


@dataclass(frozen=True)
class FeaturizerConfig:
    """Which featuriser, and its parameters (JSON round-trippable)."""

    kind: str = "2d"
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeaturizerConfig:
        return cls(kind=data.get("kind", "2d"), params=dict(data.get("params", {})))


_REGISTRY: dict[str, Any] = {"2d": Graph2DFeaturizer}


def register_featurizer(kind: str, factory: Any) -> None:
    """Make ``kind`` available to :func:`build_featurizer` (used by the 3D path)."""
    _REGISTRY[kind] = factory


def build_featurizer(config: FeaturizerConfig) -> Any:
    """Instantiate the featuriser that ``config`` describes."""
    if config.kind not in _REGISTRY:
        # The 3D featurisers register themselves on import.
        try:
            import molprop.featurize.graph3d  # noqa: F401
        except ImportError:
            pass
    if config.kind not in _REGISTRY:
        raise ConfigError(
            f"unknown featurizer kind {config.kind!r}; choose one of {sorted(_REGISTRY)}"
        )
    return _REGISTRY[config.kind](**config.params)


__all__ = [
    "MolGraph",
    "Featurizer",
    "FeaturizerConfig",
    "Graph2DFeaturizer",
    "build_featurizer",
    "register_featurizer",
]
