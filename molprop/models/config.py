"""Model, task and artifact configuration: frozen dataclasses <-> JSON."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from molprop.errors import ConfigError

TASK_TYPES = ("regression", "classification")


def from_dict_strict(cls: type, data: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
    return cls(**data)


def parse_layers(pattern: str) -> tuple[str, str]:
    """Split a layer pattern such as ``"MSMSMP S"`` into encoder (``"MSMSM"``) and the SAB
    blocks over the seeds after ``P`` (``"S"``). Spaces are ignored; exactly one ``P``."""
    compact = re.sub(r"\s+", "", pattern.upper())
    if compact.count("P") != 1 or set(compact) - set("MSP"):
        raise ConfigError(
            f"layer pattern {pattern!r} must use M, S and exactly one P (e.g. 'MSMSMP S')"
        )
    encoder, decoder = compact.split("P")
    if not encoder:
        raise ConfigError(f"layer pattern {pattern!r} has no encoder layers before P")
    if set(decoder) - {"S"}:
        raise ConfigError(f"only S layers may follow P in {pattern!r}")
    return encoder, decoder


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one ESA/NSA model.

    ``token_kind`` esa|nsa; ``layers`` e.g. ``"MSMSMP S"``; ``size_path`` gives the head
    log1p(token and node counts) and a scaled token sum (see ``molprop.nn.readout``);
    ``n_extra`` per-graph features appended before the head (label/embedding augmentation);
    ``learnable_rbf`` K > 0 appends K learnable Gaussians of the 3D edge length (cut off at
    ``rbf_cutoff`` Å) to the edge features (see ``molprop.nn.distance_basis``);
    ``size_linear`` adds the counts / SUM_SCALE to the size path (configs written before this
    option existed load with it off, so their weights keep their meaning).
    """

    node_dim: int
    edge_dim: int
    n_tasks: int
    task_type: str = "regression"
    token_kind: str = "esa"
    hidden_dim: int = 128
    heads: int = 8
    layers: str = "MSMSMP S"
    num_seeds: int = 32
    mlp_kind: str = "standard"
    mlp_mult: int = 2
    pre_ln: bool = True
    dropout: float = 0.0
    attn_dropout: float = 0.0
    size_path: bool = True
    n_extra: int = 0
    head_hidden: int = 256
    learnable_rbf: int = 0
    rbf_cutoff: float = 5.0
    size_linear: bool = True

    def __post_init__(self) -> None:
        parse_layers(self.layers)
        if self.token_kind not in ("esa", "nsa"):
            raise ConfigError(f"model must be 'esa' or 'nsa', got {self.token_kind!r}")
        if self.task_type not in TASK_TYPES:
            raise ConfigError(f"task type must be one of {TASK_TYPES}, got {self.task_type!r}")
        if self.hidden_dim % self.heads:
            raise ConfigError(f"hidden dim {self.hidden_dim} not divisible by {self.heads} heads")
        if self.mlp_kind not in ("standard", "swiglu"):
            raise ConfigError(f"MLP kind must be standard or swiglu, got {self.mlp_kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        return from_dict_strict(cls, {"size_linear": False, **data})  # absent: legacy artifact


@dataclass(frozen=True)
class TaskConfig:
    """What the model predicts: target names, units, type, scaling, per-atom training."""

    target_names: tuple[str, ...]
    task_type: str = "regression"
    units: tuple[str, ...] = ()
    scaler_mean: tuple[float, ...] = ()
    scaler_std: tuple[float, ...] = ()
    per_atom: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskConfig:
        data = dict(data)
        for key in ("target_names", "units", "scaler_mean", "scaler_std"):
            if key in data:
                data[key] = tuple(data[key])
        return from_dict_strict(cls, data)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (stored in the artifact for provenance).

    ``devices`` / ``num_nodes`` / ``strategy`` go to the Lightning Trainer (``"ddp"`` for data
    parallel; gloo on CPU); ``batch_size`` is the global batch, split across ranks. ``resume``
    continues from the per-epoch checkpoint in the output directory. ``ema_epochs`` E > 0
    validates (and keeps) an exponential moving average of the weights over ~E epochs of steps
    instead of the last step's weights (see ``models.lightning_module``); 0 turns it off.
    """

    epochs: int = 120
    batch_size: int = 32
    lr: float = 1e-4
    weight_decay: float = 1e-2
    patience: int = 30
    lr_patience: int = 8
    grad_clip: float = 0.5
    bf16: bool = False
    seed: int = 0
    ensemble_size: int = 1
    warmup_epochs: int = 0
    ema_epochs: float = 1.0
    devices: int = 1
    num_nodes: int = 1
    strategy: str = "auto"
    resume: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return from_dict_strict(cls, data)


#: Named starting points for ``molprop train / pretrain --preset NAME`` (explicit flags still
#: override each value). ``default``: the dataclass defaults (most accurate on the benchmark
#: grid's averages). ``small``: the architecture of the shipped models (pretrained/), one
#: member per ensemble slot: hidden 64, 4 heads, 4 encoder blocks, 8 seeds, no dropout, batch 64,
#: lr 5e-4 -- ~3.5x less CPU time per training epoch and ~2x less per predicted molecule (end to end)
#: than ``default`` (benchmarks/RESULTS.md: training cost, throughput, accuracy on 5 datasets).
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {"model": {}, "train": {}},
    "small": {
        "model": {
            "hidden_dim": 64,
            "heads": 4,
            "layers": "MSMSP S",
            "num_seeds": 8,
            "dropout": 0.0,
        },
        "train": {"batch_size": 64, "lr": 5e-4},
    },
}
