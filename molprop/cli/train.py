"""``molprop train``: train an ESA/NSA model (or ensemble) on a table and write an artifact."""

from __future__ import annotations

import argparse
import json
import sys

from molprop.cli.options import (
    add_data_args,
    add_model_args,
    add_split_args,
    add_train_args,
    explicit_featurizer,
    explicit_model_settings,
    featurizer_config,
    model_overrides,
    train_config,
)

#: ``--init`` value for a random start
NO_INIT = "none"
#: ``--init`` default: the foundation model for a 2D molecular task, else a random start
#: (:func:`auto_init`)
AUTO_INIT = "auto"


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="train a model on a CSV", description=__doc__)
    add_data_args(p)
    add_split_args(p)
    add_model_args(p)
    add_train_args(p)
    p.add_argument("--cutoff", type=float, default=None, help="3D radius-graph cutoff (Å)")
    p.add_argument("--name", default="", help="model name stored in the artifact")
    p.add_argument(
        "--calibration",
        choices=["validation", "cv"],
        default="validation",
        help="calibrate the intervals / probabilities on the validation split (default, cheap) "
        "or on out-of-fold predictions of train+val from a scaffold cross-validation (cv: "
        "--cv-folds more ensembles are trained with the same recipe; the model's weights are "
        "the same either way)",
    )
    p.add_argument("--cv-folds", type=int, default=5, help="folds of --calibration cv")
    p.add_argument(
        "--init",
        default=AUTO_INIT,
        metavar="ARTIFACT_OR_NAME",
        help="start from a trained model (a name, e.g. foundation, or an artifact directory): "
        "its architecture, featuriser and encoder + readout weights, a fresh head for this "
        "task; model or featuriser flags that disagree with it are an error. none: a random "
        "start. auto (default): the foundation model for a 2D molecular task (the 2D "
        "featuriser, no --per-atom) whose model and featuriser flags, if any, agree with it; "
        "otherwise, or without a foundation model, a random start (the choice and its reason "
        "are printed)",
    )
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(func=run)


def init_conflict(args: argparse.Namespace, name: str, source) -> tuple[str, str] | None:
    """How the command line's model or featuriser flags disagree with the init artifact
    ``source`` (opened from ``--init name``): (the disagreement, what to do about it); None
    when they agree."""
    model, featurizer = source.config.model, source.config.featurizer
    for key, (flag, value) in explicit_model_settings(args).items():
        if getattr(model, key, None) != value:
            return (
                f"{flag} ({key}={value!r}) conflicts with --init {name}, whose {key} is "
                f"{getattr(model, key, None)!r}",
                f"the architecture comes from the init model; drop {flag.split()[0]} or use "
                "--init none",
            )
    flags = explicit_featurizer(args)
    requested = featurizer_config(args)
    if flags and (requested.kind, requested.params) != (featurizer.kind, featurizer.params):
        named = ", ".join(flag for flag, _ in flags.values())
        return (
            f"{named} ({requested.kind} {requested.params}) conflicts with --init {name}, whose "
            f"featuriser is {featurizer.kind} {featurizer.params}",
            "the featuriser comes from the init model; drop them or use --init none",
        )
    return None


def auto_init(args: argparse.Namespace):
    """What ``--init auto`` starts from: (the opened foundation model or None for a random
    start, the reason in words). The foundation model for a 2D molecular task whose flags
    agree with it; a random start for a 3D, periodic or per-atom task, for flags that ask for
    another architecture or featuriser, and when no foundation model is installed."""
    from molprop.artifact.resolve import FOUNDATION_MODEL, has_foundation_model
    from molprop.training.warm_start import InitSource

    kind = featurizer_config(args).kind
    if kind != "2d":
        return None, f"the {kind} featuriser is not the foundation's"
    if getattr(args, "per_atom", False):
        return None, "a --per-atom model must not see the molecule's size, the foundation does"
    if not has_foundation_model():
        return None, f"no model named {FOUNDATION_MODEL!r} is installed"
    source = InitSource.open(FOUNDATION_MODEL)
    conflict = init_conflict(args, FOUNDATION_MODEL, source)
    if conflict:
        return None, conflict[0]
    return source, "a 2D molecular task"


def init_source(args: argparse.Namespace):
    """The opened ``--init`` artifact, None for a random start; ``auto`` decided by
    :func:`auto_init` and said on stderr."""
    from molprop.artifact.resolve import FOUNDATION_MODEL
    from molprop.training.warm_start import InitSource

    name = getattr(args, "init", None) or AUTO_INIT
    if name.lower() == NO_INIT:
        return None
    if name.lower() != AUTO_INIT:
        return InitSource.open(name)
    source, why = auto_init(args)
    if source is None:
        start, other = "a random start", "--init NAME to start from a model"
    else:
        start, other = f"starting from the {FOUNDATION_MODEL} model", "--init none"
    print(f"molprop train: {start} ({why}; {other})", file=sys.stderr)
    return source


def init_settings(args: argparse.Namespace):
    """``--init``: -> (the init artifact's directory or None, the model overrides, the
    featuriser). With an init artifact, the overrides are the explicit flags, each checked
    against the artifact (a disagreeing flag: :class:`ConfigError` naming it), and the
    featuriser is the artifact's."""
    from molprop.errors import ConfigError
    from molprop.featurize import FeaturizerConfig

    source = init_source(args)
    if source is None:
        return None, model_overrides(args), featurizer_config(args)
    name = getattr(args, "init", None) or AUTO_INIT
    conflict = init_conflict(args, name, source)
    if conflict:
        raise ConfigError(": ".join(conflict))
    overrides = {key: value for key, (_, value) in explicit_model_settings(args).items()}
    return source.directory, overrides, FeaturizerConfig()  # run_train takes the init's


def run(args: argparse.Namespace) -> int:
    from molprop.training.train import TrainRequest, run_train

    init, model, featurizer = init_settings(args)
    request = TrainRequest(
        data=args.data,
        smiles_column=args.smiles_column,
        target_columns=args.target_columns,
        out=args.out,
        task_type=args.task_type,
        split_type=args.split_type,
        split_sizes=tuple(args.split_sizes),
        split_column=args.split_column,
        featurizer=featurizer,
        model=model,
        train=train_config(args),
        invalid=args.invalid,
        units=args.units,
        name=args.name,
        per_atom=args.per_atom,
        progress=not args.no_progress,
        calibration=args.calibration,
        cv_folds=args.cv_folds,
        init=init,
    )
    result = run_train(request)
    if result.written:  # data parallel: the ranks > 0 wrote nothing and stay quiet
        summary = {part: result.ensemble(part) for part in ("train", "val", "test")}
        print(json.dumps(summary, indent=2))
        print(f"artifact written to {args.out}")
    return 0
