"""``molprop train``: train an ESA/NSA model (or ensemble) on a table and write an artifact."""

from __future__ import annotations

import argparse
import json

from molprop.cli.options import (
    add_data_args,
    add_model_args,
    add_split_args,
    add_train_args,
    featurizer_config,
    model_overrides,
    train_config,
)


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
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.training.train import TrainRequest, run_train

    request = TrainRequest(
        data=args.data,
        smiles_column=args.smiles_column,
        target_columns=args.target_columns,
        out=args.out,
        task_type=args.task_type,
        split_type=args.split_type,
        split_sizes=tuple(args.split_sizes),
        split_column=args.split_column,
        featurizer=featurizer_config(args),
        model=model_overrides(args),
        train=train_config(args),
        invalid=args.invalid,
        units=args.units,
        name=args.name,
        per_atom=args.per_atom,
        progress=not args.no_progress,
        calibration=args.calibration,
        cv_folds=args.cv_folds,
    )
    result = run_train(request)
    if result.written:  # data parallel: the ranks > 0 wrote nothing and stay quiet
        summary = {part: result.ensemble(part) for part in ("train", "val", "test")}
        print(json.dumps(summary, indent=2))
        print(f"artifact written to {args.out}")
    return 0
