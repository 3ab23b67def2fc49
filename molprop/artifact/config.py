"""What ``config.json`` holds: typed, JSON round-trippable, validated on load.

Layout of ``config.json`` (schema version 1; artifacts written by earlier releases load
unchanged)::

    {"schema_version": 1, "name": ..., "version": ..., "n_members": N,
     "model": ModelConfig, "task": TaskConfig, "featurizer": FeaturizerConfig,
     "train": TrainConfig,
     "extra": {provenance keys (Provenance) ..., "augment": Augmentation (augmented models)}}
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig
from molprop.models.config import ModelConfig, TaskConfig, TrainConfig, from_dict_strict

SCHEMA_VERSION = 1
#: most ensemble members an artifact may have
MAX_MEMBERS = 128

AugmentKind = Literal["label", "embed"]
#: what a label-augmented model takes as its low-fidelity input ``x`` when it predicts
AugmentInput = Literal["predicted", "measured"]
AUGMENT_INPUTS = ("predicted", "measured")


@dataclass(frozen=True)
class Augmentation:
    """How a fine-tuned model's extra per-graph inputs are made (``molprop.inference.augment``):
    ``kind`` label|embed, the sub-directory holding the pretrained artifact that makes them, and
    the (A,) standardisation statistics fitted on the training split.

    ``input`` (label kind): ``predicted`` -- ``x`` is the pretrained model's prediction, made
    from the stored copy (inductive models, and every artifact written before this field);
    ``measured`` -- the model was trained on measured low-fidelity labels ``low_columns``
    (transductive) and prediction needs them per row (``Predictor.predict(..., low=...)``,
    ``molprop predict --low-column``, the API's ``low`` field); it refuses without them."""

    kind: AugmentKind
    source: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    input: AugmentInput = "predicted"
    low_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("label", "embed"):
            raise ConfigError(f"unknown augmentation kind {self.kind!r}")
        if self.input not in AUGMENT_INPUTS:
            raise ConfigError(f"augmentation input must be one of {AUGMENT_INPUTS}")
        if self.input == "measured" and (self.kind != "label" or not self.low_columns):
            raise ConfigError("measured augmentation inputs need kind 'label' and low_columns")

    @property
    def needs_measured(self) -> bool:
        """True when prediction needs measured low-fidelity labels (``low_columns``)."""
        return self.input == "measured"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.input == "predicted":  # the layout of artifacts written before these fields
            del out["input"], out["low_columns"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Augmentation:
        return cls(
            str(data["kind"]),  # type: ignore[arg-type]
            str(data["source"]),
            tuple(data["mean"]),
            tuple(data["std"]),
            str(data.get("input", "predicted")),  # type: ignore[arg-type]
            tuple(str(c) for c in data.get("low_columns", ())),
        )


@dataclass(frozen=True)
class Provenance:
    """Where a model came from (reported in cards; never changes a prediction).

    ``data``: the training table; ``split_type``: how it was split; ``periodic``: True when
    the training data held periodic structures (3D; absent: not recorded); fine-tuned models
    add the pretrained artifact, the strategy and mode, and whether the head was
    re-initialised."""

    data: str = ""
    split_type: str = ""
    periodic: bool | None = None
    finetuned_from: str = ""
    strategy: str = ""
    mode: str = ""
    fresh_head: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        return from_dict_strict(cls, data)


@dataclass(frozen=True)
class ArtifactConfig:
    """Everything ``config.json`` holds; enough to rebuild featuriser, model and scaler."""

    model: ModelConfig
    task: TaskConfig
    featurizer: FeaturizerConfig
    train: TrainConfig = field(default_factory=TrainConfig)
    n_members: int = 1
    name: str = ""
    version: str = "1"
    provenance: Provenance = field(default_factory=Provenance)
    augment: Augmentation | None = None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not 1 <= self.n_members <= MAX_MEMBERS:
            raise ConfigError(
                f"n_members must be between 1 and {MAX_MEMBERS}, got {self.n_members}"
            )

    def to_dict(self) -> dict[str, Any]:
        extra = self.provenance.to_dict()
        if self.augment is not None:
            extra["augment"] = self.augment.to_dict()
        return {
            "schema_version": self.schema_version,
            "name": self.name,
            "version": self.version,
            "n_members": self.n_members,
            "model": self.model.to_dict(),
            "task": self.task.to_dict(),
            "featurizer": self.featurizer.to_dict(),
            "train": self.train.to_dict(),
            "extra": extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArtifactConfig:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"artifact schema version {version} unsupported (need {SCHEMA_VERSION})"
            )
        extra = dict(data.get("extra", {}))
        augment = extra.pop("augment", None)
        return cls(
            model=ModelConfig.from_dict(data["model"]),
            task=TaskConfig.from_dict(data["task"]),
            featurizer=FeaturizerConfig.from_dict(data["featurizer"]),
            train=TrainConfig.from_dict(data.get("train", {})),
            n_members=int(data.get("n_members", 1)),
            name=str(data.get("name", "")),
            version=str(data.get("version", "1")),
            provenance=Provenance.from_dict(extra),
            augment=Augmentation.from_dict(augment) if augment else None,
        )
