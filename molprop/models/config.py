"""Model, task and training configuration: frozen dataclasses <-> JSON (``config.json``).

Each setting has one home: the architecture in :class:`ModelConfig` (its attention-block
settings handed to ``molprop.nn`` as one typed :class:`~molprop.nn.attention.BlockConfig`), what
is predicted -- task type, targets, units, target scaling -- in :class:`TaskConfig` (the scaling
applied by :class:`~molprop.data.scaling.TargetScaler`), optimisation in :class:`TrainConfig`.
String options are ``Literal`` types, checked when a config is made.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from molprop.data.scaling import TargetScaler
from molprop.errors import ConfigError
from molprop.nn.attention import MLP_KINDS, BlockConfig, MlpKind
from molprop.nn.edge_sets import TOKEN_KINDS, TOKEN_SCHEMES, TokenKind, TokenScheme
from molprop.nn.heads import REGRESSION_LOSSES, TASK_TYPES, RegressionLoss, TaskType

WeightDecayOn = Literal["matrices", "all"]
WEIGHT_DECAY_ON: tuple[str, ...] = get_args(WeightDecayOn)
LOSSES = REGRESSION_LOSSES
#: ``pair_rbf`` that ``molprop train --featurizer 3d`` uses unless ``--pair-rbf`` says otherwise
#: (16 element-pair Gaussians beat none on QM9, docs/results/3d.md). ``ModelConfig``
#: itself keeps 0, the value of every config written before pair Gaussians existed.
DEFAULT_PAIR_RBF_3D = 16


def default_pair_rbf(featurizer_kind: str) -> int:
    """``pair_rbf`` for a model on ``featurizer_kind`` inputs when none is asked for: element-pair
    Gaussians for 3D (:data:`DEFAULT_PAIR_RBF_3D`), none for 2D (no distances)."""
    return DEFAULT_PAIR_RBF_3D if featurizer_kind == "3d" else 0


#: LR schedules (``TrainConfig.schedule``): ``plateau`` halves the lr when the monitored loss
#: stalls; ``warmup_decay`` (chemprop-like "Noam"): per step, linear warm-up from
#: ``lr * lr_floor`` to ``lr`` over ``warmup_epochs``, then exponential decay to ``lr * lr_floor``
#: at the last epoch (``training.lightning_module.warmup_decay_factor``).
Schedule = Literal["plateau", "warmup_decay"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)

__all__ = [
    "FINETUNE_DEFAULTS",
    "LOSSES",
    "MLP_KINDS",
    "PRESETS",
    "PRESET_KEYS",
    "SCHEDULES",
    "TASK_TYPES",
    "TOKEN_KINDS",
    "WEIGHT_DECAY_ON",
    "BlockConfig",
    "MlpKind",
    "ModelConfig",
    "Schedule",
    "TaskConfig",
    "TaskType",
    "TokenKind",
    "TrainConfig",
    "WeightDecayOn",
    "check_preset",
    "finetune_train_config",
    "parse_layers",
]

_BLOCK = BlockConfig()  # the attention-block defaults (ModelConfig repeats them as flat fields)


def check_choice(what: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices`` (a Literal's values)."""
    if value not in choices:
        raise ConfigError(f"{what} must be one of {choices}, got {value!r}")


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


#: ModelConfig's sizes: field -> (smallest, largest) accepted. The upper bounds are far above
#: any model this project trains (hidden 64-128, the largest node features 199), low enough
#: that a damaged or hostile config.json cannot ask for gigabytes before its weights are read
#: (the artifact loader also checks every shape against the weight file's header first).
SIZE_BOUNDS: dict[str, tuple[int, int]] = {
    "node_dim": (1, 8192),
    "edge_dim": (1, 8192),
    "n_tasks": (1, 4096),
    "hidden_dim": (1, 8192),
    "heads": (1, 256),
    "num_seeds": (1, 1024),
    "mlp_mult": (1, 16),
    "n_extra": (0, 8192),
    "head_hidden": (1, 8192),
    "learnable_rbf": (0, 1024),
    "pair_rbf": (0, 1024),
}
#: most M / S / P letters in a layer pattern
MAX_LAYERS = 64


def check_sizes(config: ModelConfig) -> None:
    """``ConfigError`` unless every :data:`SIZE_BOUNDS` field of ``config`` is an integer in
    its range (and ``rbf_cutoff`` a positive finite number)."""
    for name, (low, high) in SIZE_BOUNDS.items():
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"model {name} must be an integer, got {value!r}")
        if not low <= int(value) <= high:
            raise ConfigError(f"model {name} must be between {low} and {high}, got {value}")
    cutoff = config.rbf_cutoff
    if isinstance(cutoff, bool) or not isinstance(cutoff, numbers.Real) or not 0 < cutoff < 1e3:
        raise ConfigError(f"model rbf_cutoff must be a positive number of Å, got {cutoff!r}")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one ESA/NSA model.

    ``token_kind`` esa|nsa; ``token_scheme`` directed|undirected ESA edge tokens (see
    ``nn.edge_sets``; absent from old config.json files: directed, as they were); ``layers`` e.g. ``"MSMSMP S"``; ``heads`` ... ``attn_dropout`` the
    attention-block settings (:attr:`block`); ``size_path`` gives the head log1p(token and node
    counts) and a scaled token sum (see ``molprop.nn.readout``); ``n_extra`` per-graph features
    appended before the head (label/embedding augmentation); ``learnable_rbf`` K > 0 appends K
    learnable Gaussians of the 3D edge length (cut off at ``rbf_cutoff`` Å) to the edge features
    (see ``molprop.nn.distance_basis``); ``pair_rbf`` P > 0 adds P element-pair-conditioned
    learnable Gaussians (cut off at ``rbf_cutoff``) to each edge (ESA) and, summed, to each atom
    (``PairGaussianBasis``; 3D featuriser only, 0 in configs written before it existed);
    ``size_linear`` adds the counts / SUM_SCALE to the size
    path (configs written before this option existed load with it off, so their weights keep
    their meaning). ``extra_to_head`` (default on) appends the extra inputs to the head's input;
    ``extra_skip`` adds a linear map of them to the output (``y = head(emb [⊕ x]) + W·x + b``,
    the ``skip`` layer: label augmentation with a linear skip, and Δ-learning where the head
    sees no extra inputs and the frozen skip holds the linear fit); both absent in older
    configs, which therefore load unchanged.

    The task type is not an architecture setting: it lives in :class:`TaskConfig` (only the
    loss and the output transform use it). older ``config.json`` files carry a
    copy in ``model.task_type``; :meth:`from_dict` checks that it is a known task type and drops
    it. :meth:`to_dict` no longer writes it: earlier molprop versions read a missing
    ``model.task_type`` as ``"regression"`` and never use it to predict (only their training
    loss did), so they still load and predict with files written now.
    """

    node_dim: int
    edge_dim: int
    n_tasks: int
    token_kind: TokenKind = "esa"
    hidden_dim: int = 128
    heads: int = _BLOCK.heads
    layers: str = "MSMSMP S"
    num_seeds: int = 32
    mlp_kind: MlpKind = _BLOCK.mlp_kind
    mlp_mult: int = _BLOCK.mlp_mult
    pre_ln: bool = _BLOCK.pre_ln
    dropout: float = _BLOCK.dropout
    attn_dropout: float = _BLOCK.attn_dropout
    size_path: bool = True
    n_extra: int = 0
    head_hidden: int = 256
    learnable_rbf: int = 0
    rbf_cutoff: float = 5.0
    size_linear: bool = True
    extra_to_head: bool = True
    extra_skip: bool = False
    token_scheme: TokenScheme = "directed"
    pair_rbf: int = 0

    def __post_init__(self) -> None:
        check_sizes(self)
        if not isinstance(self.layers, str) or len(self.layers) > 4 * MAX_LAYERS:
            raise ConfigError(
                f"model layers must be a pattern such as 'MSMSMP S', got {self.layers!r}"
            )
        encoder, decoder = parse_layers(self.layers)
        if len(encoder) + len(decoder) + 1 > MAX_LAYERS:
            raise ConfigError(f"layer pattern {self.layers!r} has more than {MAX_LAYERS} blocks")
        if self.extra_skip and not self.n_extra:
            raise ConfigError("extra_skip (a linear map of the extra inputs) needs n_extra > 0")
        check_choice("token kind (model)", self.token_kind, TOKEN_KINDS)
        check_choice("token scheme (model)", self.token_scheme, TOKEN_SCHEMES)
        if self.token_scheme != "directed" and self.token_kind != "esa":
            raise ConfigError("token_scheme 'undirected' is for ESA (edge-token) models only")
        _ = self.block  # BlockConfig checks heads, MLP kind and dropouts
        if self.hidden_dim % self.heads:
            raise ConfigError(f"hidden dim {self.hidden_dim} not divisible by {self.heads} heads")

    @property
    def block(self) -> BlockConfig:
        """The settings shared by every attention block, as ``molprop.nn`` takes them."""
        return BlockConfig(
            heads=self.heads,
            mlp_mult=self.mlp_mult,
            mlp_kind=self.mlp_kind,
            pre_ln=self.pre_ln,
            dropout=self.dropout,
            attn_dropout=self.attn_dropout,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key, default in (
            ("extra_to_head", True),
            ("extra_skip", False),
            # the only scheme earlier: config.json files of directed models stay
            # readable by older molprop
            ("token_scheme", "directed"),
            ("pair_rbf", 0),  # element-pair Gaussians: absent before them
        ):
            if out[key] == default:  # written only when set: the earlier layout otherwise
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        data = {"size_linear": False, **data}  # absent: legacy artifact
        if "task_type" in data:  # legacy copy of TaskConfig.task_type (see class docstring)
            check_choice("model.task_type", data.pop("task_type"), TASK_TYPES)
        return from_dict_strict(cls, data)


@dataclass(frozen=True)
class TaskConfig:
    """What the model predicts: target names, units, ``task_type`` (regression|classification,
    its one home), target scaling and per-atom training.

    ``scaler_mean`` / ``scaler_std`` are the stored statistics of :attr:`scaler`, the one
    implementation of the scaling (``(y - mean) / std`` for training, its inverse for
    predictions); classification tasks are not scaled (identity statistics).
    """

    target_names: tuple[str, ...]
    task_type: TaskType = "regression"
    units: tuple[str, ...] = ()
    scaler_mean: tuple[float, ...] = ()
    scaler_std: tuple[float, ...] = ()
    per_atom: bool = False
    #: the names the targets had before they were renamed (same order; empty: never renamed),
    #: still accepted where a target is named (:meth:`resolve_target`) for a deprecation period
    former_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice("task type", self.task_type, TASK_TYPES)
        if self.former_names and len(self.former_names) != len(self.target_names):
            raise ConfigError(
                f"former_names has {len(self.former_names)} names for "
                f"{len(self.target_names)} targets"
            )
        if len(self.scaler_mean) != len(self.scaler_std):
            raise ConfigError(
                f"scaler_mean has {len(self.scaler_mean)} values, scaler_std {len(self.scaler_std)}"
            )
        for name, values in (("scaler_mean", self.scaler_mean), ("scaler_std", self.scaler_std)):
            if not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                for v in values
            ):
                raise ConfigError(f"{name} must hold finite numbers, got {list(values)}")

    @property
    def scaler(self) -> TargetScaler:
        return TargetScaler(self.scaler_mean, self.scaler_std)

    def resolve_target(self, name: str) -> str:
        """A target's current name from its current or former name (a former name warns:
        ``FutureWarning``); an unknown name: ``ConfigError`` listing the targets."""
        if name in self.target_names:
            return name
        if name in self.former_names:
            current = self.target_names[self.former_names.index(name)]
            warnings.warn(
                f"target {name!r} is now called {current!r}; the old name is accepted for a "
                "deprecation period only",
                FutureWarning,
                stacklevel=2,
            )
            return current
        raise ConfigError(f"unknown target {name!r}; the model predicts {list(self.target_names)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskConfig:
        data = dict(data)
        for key in ("target_names", "units", "scaler_mean", "scaler_std", "former_names"):
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
    instead of the last step's weights (see ``training.lightning_module``); 0 turns it off.
    ``schedule`` / ``warmup_epochs`` / ``lr_floor``: the LR schedule (see :data:`Schedule`; the
    default ``plateau`` is the only earlier one, so old artifacts read as it).
    ``weight_decay_on`` ``"matrices"``: AdamW decays only the weight matrices of Linear layers
    (not biases, LayerNorm weights, PMA seeds or distance-basis centres / widths); ``"all"``:
    every trainable parameter (the only earlier behaviour; artifacts written before the
    option existed load with it). ``loss`` (regression only): ``"mse"`` squared error
    (the default, and what every earlier artifact used), ``"mae"`` absolute error, ``"huber"``
    Huber with delta 1, all on standardised targets; classification always trains with BCE and
    refuses any other value.
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
    weight_decay_on: WeightDecayOn = "matrices"
    schedule: Schedule = "plateau"
    lr_floor: float = 0.1
    loss: RegressionLoss = "mse"

    def __post_init__(self) -> None:
        check_choice("weight_decay_on", self.weight_decay_on, WEIGHT_DECAY_ON)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("loss", self.loss, LOSSES)
        if not 0.0 < self.lr_floor <= 1.0:
            raise ConfigError(f"lr_floor must be in (0, 1], got {self.lr_floor}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return from_dict_strict(cls, {"weight_decay_on": "all", **data})  # absent: legacy


#: Named starting points for ``molprop train / pretrain --preset NAME`` (explicit flags still
#: override each value; with no ``--preset`` the CLI uses ``default``). ``default`` = ``small``:
#: hidden 64, 4 heads, 4 encoder blocks, 8 seeds, no dropout, batch 64, lr 5e-4
#: (the shipped models' architecture). ``wide``: the default before it (the dataclass defaults:
#: hidden 128, 8 heads, 5 blocks, lr 1e-4) -- more accurate on Lipophilicity, ~3.5x the CPU time
#: per training epoch (benchmarks/RESULTS.md, docs/results/default_search.md).
_SMALL: dict[str, dict[str, Any]] = {
    "model": {
        "hidden_dim": 64,
        "heads": 4,
        "layers": "MSMSP S",
        "num_seeds": 8,
        "dropout": 0.0,
        "token_scheme": "directed",
    },
    "train": {"batch_size": 64, "lr": 5e-4, "schedule": "plateau"},
}

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # `molprop hpopt` on Lipophilicity found nothing within the per-epoch
    # cost of chemprop that beat `small` on validation data (docs/results/default_search.md), so
    # `small` is the default; what the presets leave out are the dataclass defaults
    "default": _SMALL,
    # the earlier default spelled out (the dataclass defaults above): hidden 128, 8
    # heads, 5 blocks; most accurate on Lipophilicity, 2.75x chemprop's CPU time per epoch
    "wide": {
        "model": {
            "hidden_dim": 128,
            "heads": 8,
            "layers": "MSMSMP S",
            "num_seeds": 32,
            "dropout": 0.0,
            "token_scheme": "directed",
        },
        "train": {"batch_size": 32, "lr": 1e-4, "schedule": "plateau"},
    },
    # the shipped models' architecture (pretrained/); the same values as `default`
    "small": _SMALL,
}

#: A fine-tune's own training defaults over ``molprop train``'s: a 30-epoch budget, a linear
#: warm-up over 2 epochs, then exponential decay to lr * lr_floor. Chosen on the selection
#: parts of 4 MoleculeACE training sets against train's plateau schedule with <= 120 epochs,
#: patience 10, half / twice the lr and a frozen encoder for 5 epochs
#: (``benchmarks.finetune_defaults``; docs/results/foundation.md).
FINETUNE_DEFAULTS: dict[str, Any] = {"epochs": 30, "schedule": "warmup_decay", "warmup_epochs": 2}


def finetune_train_config(**overrides: Any) -> TrainConfig:
    """The training settings of a fine-tune: ``molprop train``'s (the ``default`` preset over
    :class:`TrainConfig`) with :data:`FINETUNE_DEFAULTS`, then ``overrides``. ``molprop
    finetune``, :class:`molprop.transfer.finetune.FinetuneRequest` and the service's fine-tune
    jobs all start here, so a fine-tune trains the same way whichever way it is asked for."""
    return TrainConfig(**{**PRESETS["default"]["train"], **FINETUNE_DEFAULTS, **overrides})


#: What a preset (a name above, or a JSON file ``{"model": {...}, "train": {...}}`` such as
#: ``molprop hpopt`` writes) may set: the settings the CLI fills from ``--preset``.
PRESET_KEYS: dict[str, tuple[str, ...]] = {
    "model": ("layers", "hidden_dim", "heads", "num_seeds", "dropout", "token_scheme"),
    "train": ("batch_size", "lr", "schedule", "warmup_epochs", "lr_floor"),
}


def check_preset(preset: Any, origin: str) -> dict[str, dict[str, Any]]:
    """``preset`` as ``{"model": {...}, "train": {...}}`` (missing sections empty); a section or
    key outside :data:`PRESET_KEYS` is a ``ConfigError`` naming it and ``origin``."""
    if not isinstance(preset, dict):
        raise ConfigError(f"preset {origin}: expected a JSON object, got {type(preset).__name__}")
    unknown = sorted(set(preset) - set(PRESET_KEYS))
    if unknown:
        raise ConfigError(f"preset {origin}: unknown section(s) {unknown} (allowed: model, train)")
    out: dict[str, dict[str, Any]] = {}
    for section, allowed in PRESET_KEYS.items():
        values = preset.get(section, {})
        if not isinstance(values, dict):
            raise ConfigError(f"preset {origin}: {section!r} must be an object")
        bad = sorted(set(values) - set(allowed))
        if bad:
            raise ConfigError(
                f"preset {origin}: {section} key(s) {bad} cannot be preset (allowed: {allowed})"
            )
        out[section] = dict(values)
    return out
