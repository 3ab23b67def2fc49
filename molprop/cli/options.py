"""Argument groups shared by training-like subcommands (train, pretrain, finetune)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig
from molprop.models.config import (
    DEFAULT_PAIR_RBF_3D,
    LOSSES,
    MLP_KINDS,
    PRESETS,
    SCHEDULES,
    TASK_TYPES,
    TOKEN_KINDS,
    WEIGHT_DECAY_ON,
    ModelConfig,
    TaskConfig,
    TrainConfig,
    check_preset,
    default_pair_rbf,
)

_M = ModelConfig.__dataclass_fields__
_T = TrainConfig()


def add_data_args(p: argparse.ArgumentParser, targets_required: bool = True) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, help="CSV (or SDF / extxyz with --featurizer 3d)")
    g.add_argument("--smiles-column", default="smiles", help="column with SMILES (default: smiles)")
    g.add_argument(
        "--target-columns", nargs="+", required=targets_required, help="target column(s)"
    )
    g.add_argument(
        "--task-type",
        choices=list(TASK_TYPES),
        default=TaskConfig.__dataclass_fields__["task_type"].default,
    )
    g.add_argument("--units", nargs="+", default=[], help="unit of each target (for the card)")
    g.add_argument(
        "--invalid",
        choices=["skip", "error"],
        default="skip",
        help="invalid rows: report and skip (default) or stop",
    )
    # None = not given (the default, "2d" / "{}"): train --init tells it from an explicit flag
    g.add_argument("--featurizer", default=None, help="2d (RDKit graph, default) or 3d")
    g.add_argument("--featurizer-params", default=None, help="JSON dict of featurizer options")
    g.add_argument(
        "--per-atom",
        action="store_true",
        help="extensive target: train on target / n_atoms, report totals",
    )


def _shown(section: str, key: str) -> Any:
    """The value ``molprop train`` uses for a preset-able setting with no flag and no
    ``--preset``: the ``default`` preset's, else the dataclass default (for --help)."""
    fallback = _M[key].default if section == "model" else getattr(_T, key)
    return preset_values("default")[section].get(key, fallback)


def add_split_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("split")
    g.add_argument("--split-type", choices=["random", "scaffold", "column"], default="scaffold")
    g.add_argument("--split-sizes", nargs=3, type=float, default=[0.8, 0.1, 0.1])
    g.add_argument("--split-column", default=None, help="column of train/val/test labels")


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--preset",
        type=preset_arg,
        default=None,
        help="named starting point: default (= small: hidden 64, 4 heads, "
        "'MSMSP S', batch 64, lr 5e-4; the shipped models' size), wide (the earlier default: "
        "hidden 128, 8 heads, 'MSMSMP S', lr 1e-4; ~3.5x the CPU time per epoch), or a preset "
        "JSON file (molprop hpopt writes one); explicit flags override its values",
    )
    # every model flag defaults to None (not given): filled from the preset, else the dataclass
    # default (model_overrides); train --init tells an explicit flag from a default this way
    g.add_argument(
        "--model",
        choices=list(TOKEN_KINDS),
        default=None,
        help=f"default {_M['token_kind'].default}",
    )
    g.add_argument(
        "--layers", default=None, help=f"e.g. 'MSMSMP S' (default {_shown('model', 'layers')!r})"
    )
    g.add_argument(
        "--hidden-dim", type=int, default=None, help=f"default {_shown('model', 'hidden_dim')}"
    )
    g.add_argument("--heads", type=int, default=None, help=f"default {_shown('model', 'heads')}")
    g.add_argument(
        "--num-seeds", type=int, default=None, help=f"default {_shown('model', 'num_seeds')}"
    )
    g.add_argument(
        "--token-scheme",
        choices=["directed", "undirected"],
        default=None,
        help="ESA edge tokens: directed (one per bond direction) or undirected (one per bond, "
        f"symmetric features: half the tokens); default {_shown('model', 'token_scheme')}",
    )
    g.add_argument(
        "--mlp", choices=list(MLP_KINDS), default=None, help=f"default {_M['mlp_kind'].default}"
    )
    g.add_argument(
        "--post-ln", action="store_true", default=None, help="post-LN blocks (default pre-LN)"
    )
    g.add_argument(
        "--dropout", type=float, default=None, help=f"default {_shown('model', 'dropout')}"
    )
    g.add_argument(
        "--attn-dropout", type=float, default=None, help=f"default {_M['attn_dropout'].default}"
    )
    g.add_argument(
        "--no-size-path", action="store_true", default=None, help="disable the size signal"
    )
    g.add_argument(
        "--no-size-linear",
        action="store_true",
        default=None,
        help="size path with log-counts only (no linear counts)",
    )
    g.add_argument(
        "--learnable-rbf",
        type=int,
        default=None,
        metavar="K",
        help="3D only: append K learnable Gaussians of the edge length (default 0: off)",
    )
    g.add_argument(
        "--pair-rbf",
        type=int,
        default=None,
        metavar="K",
        help="3D only: K learnable Gaussians conditioned on the element pair, on each edge and "
        f"summed per atom (default {DEFAULT_PAIR_RBF_3D} with --featurizer 3d, 0 (off) otherwise)",
    )
    g.add_argument(
        "--rbf-cutoff",
        type=float,
        default=None,
        help=f"cutoff (Å) of the learnable Gaussians (default {_M['rbf_cutoff'].default})",
    )


def add_train_args(p: argparse.ArgumentParser, own: dict[str, Any] | None = None) -> None:
    """The training flags. ``own``: a subcommand's own defaults for ``epochs``, ``schedule`` or
    ``warmup_epochs`` (``molprop finetune``'s), used and shown in --help instead of train's."""
    own = own or {}
    unknown = set(own) - {"epochs", "schedule", "warmup_epochs"}
    if unknown:
        raise ValueError(f"no own default for {sorted(unknown)}")
    g = p.add_argument_group("training")
    if "epochs" in own:
        g.add_argument("--epochs", type=int, default=own["epochs"], help=f"default {own['epochs']}")
    else:
        g.add_argument("--epochs", type=int, default=_T.epochs)
    g.add_argument(
        "--batch-size", type=int, default=None, help=f"default {_shown('train', 'batch_size')}"
    )
    g.add_argument("--lr", type=float, default=None, help=f"default {_shown('train', 'lr'):g}")
    g.add_argument(
        "--schedule",
        choices=list(SCHEDULES),
        default=own.get("schedule"),
        help=f"LR schedule (default {own.get('schedule') or _shown('train', 'schedule')}): "
        "plateau halves the lr when the validation "
        "loss stalls; warmup_decay warms up linearly from lr * lr_floor to --lr over "
        "--warmup-epochs, then decays exponentially to lr * lr_floor at the last epoch",
    )
    warmup = own.get("warmup_epochs", _shown("train", "warmup_epochs"))
    g.add_argument(
        "--warmup-epochs",
        type=int,
        default=own.get("warmup_epochs"),
        help=f"warm-up of --schedule warmup_decay (default {warmup})",
    )
    g.add_argument(
        "--lr-floor",
        type=float,
        default=None,
        help=f"warmup_decay: start and end lr as a fraction of --lr (default {_T.lr_floor:g})",
    )
    g.add_argument("--weight-decay", type=float, default=_T.weight_decay)
    g.add_argument(
        "--weight-decay-on",
        choices=list(WEIGHT_DECAY_ON),
        default=_T.weight_decay_on,
        help="matrices: decay only Linear weight matrices (not biases, LayerNorm, PMA seeds); "
        f"all: every parameter (default {_T.weight_decay_on})",
    )
    g.add_argument(
        "--loss",
        choices=list(LOSSES),
        default=None,
        help=f"regression loss on standardised targets (default {_T.loss}; huber: delta 1); "
        "classification always uses BCE and rejects this flag",
    )
    g.add_argument("--patience", type=int, default=_T.patience, help="early-stopping patience")
    g.add_argument(
        "--ema-epochs",
        type=float,
        default=_T.ema_epochs,
        help="validate and keep a moving average of the weights over ~N epochs of "
        f"steps (default {_T.ema_epochs:g}; 0: the raw weights)",
    )
    g.add_argument("--ensemble-size", type=int, default=_T.ensemble_size)
    g.add_argument("--seed", type=int, default=_T.seed)
    g.add_argument("--bf16", action="store_true", help="bf16 autocast")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument(
        "--devices",
        type=int,
        default=_T.devices,
        help="processes (CPU) or accelerators per node (default 1)",
    )
    g.add_argument("--num-nodes", type=int, default=_T.num_nodes, help="machines (default 1)")
    g.add_argument(
        "--strategy",
        default=_T.strategy,
        help="Lightning strategy: auto (default) or ddp (gloo on CPU)",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue from the last per-epoch checkpoint in the output directory",
    )


def preset_values(name_or_path: str) -> dict[str, dict[str, Any]]:
    """A preset by name (:data:`PRESETS`) or from a JSON file (checked by ``check_preset``)."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(
            f"--preset {name_or_path!r} is neither a preset name ({', '.join(sorted(PRESETS))}) "
            "nor a file"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"preset {path}: not JSON ({exc})") from exc
    return check_preset(data, str(path))


def preset_arg(text: str) -> str:
    """``--preset``: a name or a readable, valid preset file (checked at parse time)."""
    try:
        preset_values(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _pick(args: argparse.Namespace, section: str, key: str, default: object) -> Any:
    """The explicit flag ``args.<key>``, else the ``--preset`` value, else ``default`` (the
    dataclass's): a value of the field's type, read from the command line or the preset's JSON."""
    value = getattr(args, key, None)
    if value is not None:
        return value
    preset = preset_values(getattr(args, "preset", None) or "default")[section]
    return preset.get(key, default)


def token_scheme(args: argparse.Namespace) -> str:
    """``--token-scheme``, else the preset's -- for ESA on 2D graphs only. NSA models have no
    edge tokens, and 3D inputs (radius graphs, periodic slabs and crystals, for which one token
    per bond is not defined) keep directed tokens unless asked: the 3D featuriser was measured
    with them (docs/results/3d.md)."""
    if getattr(args, "token_scheme", None) is not None:
        return args.token_scheme
    if token_kind(args) != "esa" or featurizer_kind(args) == "3d":
        return "directed"
    return _pick(args, "model", "token_scheme", _M["token_scheme"].default)


def token_kind(args: argparse.Namespace) -> str:
    return getattr(args, "model", None) or cast(str, _M["token_kind"].default)


def featurizer_kind(args: argparse.Namespace) -> str:
    return getattr(args, "featurizer", None) or "2d"


def _given(args: argparse.Namespace, key: str, default: object) -> object:
    value = getattr(args, key, None)
    return default if value is None else value


def model_overrides(args: argparse.Namespace) -> dict:
    def m(key: str) -> object:
        return _pick(args, "model", key, _M[key].default)

    return {
        "token_kind": token_kind(args),
        "layers": m("layers"),
        "hidden_dim": m("hidden_dim"),
        "heads": m("heads"),
        "num_seeds": m("num_seeds"),
        "mlp_kind": _given(args, "mlp", _M["mlp_kind"].default),
        "pre_ln": not args.post_ln,
        "dropout": m("dropout"),
        "token_scheme": token_scheme(args),
        "attn_dropout": _given(args, "attn_dropout", _M["attn_dropout"].default),
        "size_path": not args.no_size_path,
        "size_linear": not args.no_size_linear,
        "learnable_rbf": _given(args, "learnable_rbf", _M["learnable_rbf"].default),
        "rbf_cutoff": _given(args, "rbf_cutoff", _M["rbf_cutoff"].default),
        "pair_rbf": pair_rbf(args),
    }


def _same(value: Any) -> Any:
    return value


def _negated(value: Any) -> Any:
    return not value


#: ``ModelConfig`` field -> (its flag, the flag's argparse dest, flag value -> field value)
MODEL_FLAGS: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "token_kind": ("--model", "model", _same),
    "layers": ("--layers", "layers", _same),
    "hidden_dim": ("--hidden-dim", "hidden_dim", _same),
    "heads": ("--heads", "heads", _same),
    "num_seeds": ("--num-seeds", "num_seeds", _same),
    "token_scheme": ("--token-scheme", "token_scheme", _same),
    "mlp_kind": ("--mlp", "mlp", _same),
    "pre_ln": ("--post-ln", "post_ln", _negated),
    "dropout": ("--dropout", "dropout", _same),
    "attn_dropout": ("--attn-dropout", "attn_dropout", _same),
    "size_path": ("--no-size-path", "no_size_path", _negated),
    "size_linear": ("--no-size-linear", "no_size_linear", _negated),
    "learnable_rbf": ("--learnable-rbf", "learnable_rbf", _same),
    "rbf_cutoff": ("--rbf-cutoff", "rbf_cutoff", _same),
    "pair_rbf": ("--pair-rbf", "pair_rbf", _same),
}


def explicit_model_settings(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """The model settings given on the command line: ``ModelConfig`` field -> (the flag that
    set it, the field's value); a given ``--preset`` contributes its model values."""
    out: dict[str, tuple[str, Any]] = {}
    preset = getattr(args, "preset", None)
    if preset is not None:
        for key, value in preset_values(preset)["model"].items():
            out[key] = (f"--preset {preset}", value)
    for key, (flag, dest, to_field) in MODEL_FLAGS.items():
        value = getattr(args, dest, None)
        if value is not None:
            out[key] = (flag, to_field(value))
    return out


def explicit_featurizer(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """The featuriser settings given on the command line: name -> (flag, value)."""
    out: dict[str, tuple[str, Any]] = {}
    if getattr(args, "featurizer", None) is not None:
        out["kind"] = ("--featurizer", args.featurizer)
    if getattr(args, "featurizer_params", None) is not None:
        out["params"] = ("--featurizer-params", json.loads(args.featurizer_params))
    if getattr(args, "cutoff", None) is not None:
        out["cutoff"] = ("--cutoff", args.cutoff)
    return out


def pair_rbf(args: argparse.Namespace) -> int:
    """``--pair-rbf``, or its default: element-pair Gaussians for 3D inputs, none for 2D."""
    if getattr(args, "pair_rbf", None) is not None:
        return int(args.pair_rbf)
    return default_pair_rbf(featurizer_kind(args))


def train_config(args: argparse.Namespace) -> TrainConfig:
    loss = getattr(args, "loss", None)
    if loss is not None and getattr(args, "task_type", "regression") == "classification":
        raise ConfigError(
            f"--loss {loss}: classification tasks are trained with binary cross-entropy; "
            "--loss applies to regression only"
        )
    return TrainConfig(
        loss=loss or _T.loss,
        epochs=args.epochs,
        batch_size=_pick(args, "train", "batch_size", _T.batch_size),
        lr=_pick(args, "train", "lr", _T.lr),
        schedule=_pick(args, "train", "schedule", _T.schedule),
        warmup_epochs=_pick(args, "train", "warmup_epochs", _T.warmup_epochs),
        lr_floor=_pick(args, "train", "lr_floor", _T.lr_floor),
        weight_decay=args.weight_decay,
        weight_decay_on=args.weight_decay_on,
        patience=args.patience,
        bf16=args.bf16,
        seed=args.seed,
        ensemble_size=args.ensemble_size,
        ema_epochs=args.ema_epochs,
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        resume=args.resume,
    )


def featurizer_config(args: argparse.Namespace) -> FeaturizerConfig:
    params = json.loads(args.featurizer_params or "{}")
    if getattr(args, "cutoff", None) is not None:
        params["cutoff"] = args.cutoff
    return FeaturizerConfig(kind=featurizer_kind(args), params=params)
