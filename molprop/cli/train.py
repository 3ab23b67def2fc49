"""``molprop train``: train an ESA/NSA model (or ensemble) on a table and write an artifact."""

from __future__ import annotations

import argparse
import json

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
        default="none",
        metavar="ARTIFACT_OR_NAME",
        help="start from a trained model (a name, e.g. foundation, or an artifact directory): "
        "its architecture, featuriser and encoder + readout weights, a fresh head for this "
        "task; model or featuriser flags that disagree with it are an error. none (default): "
        "a random start",
    )
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(func=run)


def init_settings(args: argparse.Namespace):
    """``--init``: -> (the init artifact's directory or None, the model overrides, the
    featuriser). With an init artifact, the overrides are the explicit flags, each checked
    against the artifact (a disagreeing flag: :class:`ConfigError` naming it), and the
    featuriser is the artifact's."""
    from molprop.errors import ConfigError
    from molprop.featurize import FeaturizerConfig
    from molprop.training.warm_start import InitSource

    name = getattr(args, "init", None) or NO_INIT
    if name.lower() == NO_INIT:
        return None, model_overrides(args), featurizer_config(args)
    source = InitSource.open(name)
    model, featurizer = source.config.model, source.config.featurizer
    given = explicit_model_settings(args)
    for key, (flag, value) in given.items():
        if getattr(model, key, None) != value:
            raise ConfigError(
                f"{flag} ({key}={value!r}) conflicts with --init {name}, whose {key} is "
                f"{getattr(model, key, None)!r}: the architecture comes from the init model; "
                f"drop {flag.split()[0]} or use --init none"
            )
    flags = explicit_featurizer(args)
    requested = featurizer_config(args)
    if flags and (requested.kind, requested.params) != (featurizer.kind, featurizer.params):
        named = ", ".join(flag for flag, _ in flags.values())
        raise ConfigError(
            f"{named} ({requested.kind} {requested.params}) conflicts with --init {name}, whose "
            f"featuriser is {featurizer.kind} {featurizer.params}: the featuriser comes from "
            "the init model; drop them or use --init none"
        )
    overrides = {key: value for key, (_, value) in given.items()}
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
