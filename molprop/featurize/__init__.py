"""Featurisers: parsed molecules / structures -> numpy-only :class:`MolGraph`.

A featuriser is described by a :class:`FeaturizerConfig` (stored in every artifact) and built
with :func:`build_featurizer`, so inference always rebuilds the features used in training.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from molprop.errors import ConfigError
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.graph import MolGraph


class Featurizer(Protocol):
    """Anything that turns one input record into a :class:`MolGraph`."""

    node_dim: int
    edge_dim: int

    def from_smiles(self, smiles: str) -> MolGraph: ...


#: Version of each featuriser's output, recorded in every artifact's ``config.json``. A model is
#: only served with the featuriser version it was trained on. History: "2d" 1 -> 2 and "3d"
#: 1 -> 2: stereo as CIP classes instead of RDKit's atom-order-relative chiral tags, and 3D
#: conformers embedded from a canonical atom order (same molecule, same features). "3d" 2 -> 3
#: a ``mode`` parameter, default ``"bonds"`` (RDKit atom / bond features on bond
#: tokens + distances) and ``atom_gaussians`` on by default; every graph carries atomic numbers.
#: "3d" 3 -> 4: ``include_h`` defaults to None (heavy-atom graph where bonds are known,
#: hydrogens as nodes on the radius-graph fallback) instead of True.
FEATURIZER_VERSIONS: dict[str, int] = {"2d": 2, "3d": 4}

#: Older versions still served, each with the parameter defaults it had: the parameters a config
#: of that version leaves out are filled in, so the features (and hence the model) are the ones
#: it was trained with. "3d" version 2 is the radius-graph mode, unchanged; version 3 kept the
#: hydrogens as nodes by default.
COMPATIBLE_VERSIONS: dict[tuple[str, int], dict[str, Any]] = {
    ("3d", 2): {"mode": "radius", "atom_gaussians": False, "include_h": True},
    ("3d", 3): {"include_h": True},
}
#: The only mode an older version had, where it had one (version 3 had both).
_LEGACY_MODE: dict[tuple[str, int], str] = {("3d", 2): "radius"}


@dataclass(frozen=True)
class FeaturizerConfig:
    """Which featuriser, its parameters and its version (JSON round-trippable).

    ``version=None`` means the current version of ``kind``; a config read from JSON without a
    version is version 1 (artifacts written before versions were recorded).
    """

    kind: str = "2d"
    params: dict[str, Any] = field(default_factory=dict)
    version: int | None = None

    @property
    def resolved_version(self) -> int:
        return self.version if self.version is not None else FEATURIZER_VERSIONS.get(self.kind, 1)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "version": self.resolved_version}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeaturizerConfig:
        return cls(
            kind=data.get("kind", "2d"),
            params=dict(data.get("params", {})),
            version=int(data.get("version", 1)),
        )


_REGISTRY: dict[str, Any] = {"2d": Graph2DFeaturizer}


def register_featurizer(kind: str, factory: Any) -> None:
    """Make ``kind`` available to :func:`build_featurizer`."""
    _REGISTRY[kind] = factory


def build_featurizer(config: FeaturizerConfig) -> Any:
    """Instantiate the featuriser that ``config`` describes."""
    if config.kind == "3d" and "3d" not in _REGISTRY:
        # loaded when first asked for (conformers, neighbour lists)
        from molprop.featurize.graph3d import Graph3DFeaturizer

        _REGISTRY["3d"] = Graph3DFeaturizer
    if config.kind not in _REGISTRY:
        raise ConfigError(
            f"unknown featurizer kind {config.kind!r}; choose one of {sorted({*_REGISTRY, '3d'})}"
        )
    current = FEATURIZER_VERSIONS.get(config.kind, 1)
    key = (config.kind, config.resolved_version)
    legacy = COMPATIBLE_VERSIONS.get(key)
    if legacy is not None:
        params = {**legacy, **config.params}
        if key in _LEGACY_MODE and params.get("mode") != _LEGACY_MODE[key]:
            raise ConfigError(
                f"{config.kind!r} featuriser version {config.resolved_version} has no mode "
                f"{params['mode']!r}; retrain or fine-tune the model with this release"
            )
        return _REGISTRY[config.kind](**params)
    if config.resolved_version != current:
        raise ConfigError(
            f"this model was trained with {config.kind!r} featuriser version "
            f"{config.resolved_version}, but this molprop computes version {current} (version 1 "
            "used atom-order-dependent stereo features); retrain or fine-tune the model with "
            "this release"
        )
    return _REGISTRY[config.kind](**config.params)


__all__ = [
    "COMPATIBLE_VERSIONS",
    "FEATURIZER_VERSIONS",
    "MolGraph",
    "Featurizer",
    "FeaturizerConfig",
    "Graph2DFeaturizer",
    "build_featurizer",
    "register_featurizer",
]
