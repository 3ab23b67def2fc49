"""``molprop pretrain``: train on low-fidelity labels (fixed epoch budget with --holdout 0, or
early stopping on a random held-out fraction of the pretraining set). Same options and artifact
as ``molprop train``, with the split replaced by the hold-out."""

from __future__ import annotations

import argparse

from molprop.cli.options import add_data_args, add_model_args, add_train_args


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="pretrain on low-fidelity labels", description=__doc__)
    add_data_args(p)
    add_model_args(p)
    add_train_args(p)
    p.add_argument(
        "--holdout",
        type=float,
        default=0.1,
        help="random fraction held out for early stopping (0: fixed epoch budget)",
    )
    p.add_argument("--cutoff", type=float, default=None, help="3D radius-graph cutoff (Å)")
    p.add_argument("--name", default="", help="model name stored in the artifact")
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.cli import train
    from molprop.errors import ConfigError

    if not 0.0 <= args.holdout < 1.0:
        raise ConfigError(f"--holdout must be in [0, 1), got {args.holdout}")
    args.split_type, args.split_column = "random", None
    args.split_sizes = [1.0 - args.holdout, args.holdout, 0.0]
    # calibrated on the hold-out; a scaffold cross-validation of a pretraining set is not offered
    args.calibration, args.cv_folds = "validation", 0
    return train.run(args)
