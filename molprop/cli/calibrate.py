"""``molprop calibrate``: recalibrate a trained model on your own labelled data (e.g. an
in-house assay) and write a new version of the artifact. The weights never change: only the
conformal intervals (regression) or the Platt scaling (classification) are refitted, on every
valid, labelled row of ``--data``. ``--cv-data TABLE`` instead fits on out-of-fold
predictions of TABLE (the model's own training rows, never its test rows) by ensembles retrained
with the model's recipe on ``--cv-folds`` scaffold folds of it (5-fold: 5 more trainings).

``--out DIR``: the artifact is copied to DIR (new or empty) and the copy recalibrated; the
original is left untouched. Without ``--out`` the artifact given as a path (``./my_model``) is
recalibrated in place and its previous calibration kept as ``calibration.v<old version>.json``;
a model given by name (a shipped one) needs ``--out``. The ``version`` in ``config.json`` goes
up by one; ``metrics.json`` and the card describe the new calibration (its coverage on
``--test`` when given, a labelled table not used to fit)."""

from __future__ import annotations

import argparse
import json

from molprop.artifact.calibration import DEFAULT_DIFFICULTY, DIFFICULTIES


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name,
        help="recalibrate a model's intervals / probabilities on labelled data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data", default=None, help="labelled CSV (or SDF / extxyz for 3D models) to fit on"
    )
    source.add_argument(
        "--cv-data",
        default=None,
        help="the model's own training table (train + validation rows, no test rows): fit on "
        "out-of-fold predictions of ensembles retrained with the model's recipe on scaffold "
        "folds of it (--cv-folds ensembles are trained; the weights do not change)",
    )
    p.add_argument("--cv-folds", type=int, default=5, help="folds of --cv-data (default 5)")
    p.add_argument(
        "--cv-work", default=None, help="keep the --cv-data fold models here (default: temporary)"
    )
    p.add_argument(
        "--threads", type=int, default=None, help="torch threads of the --cv-data fold trainings"
    )
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument(
        "--target-column",
        "--target-columns",
        dest="target_columns",
        nargs="+",
        default=None,
        help="label column(s), in the model's target order (default: the model's names)",
    )
    p.add_argument(
        "--out", default=None, help="write the recalibrated copy here (default: in place)"
    )
    p.add_argument(
        "--test",
        default=None,
        help="labelled table (not used to fit) on which to measure the new calibration",
    )
    p.add_argument(
        "--difficulty",
        choices=DIFFICULTIES,
        default=DEFAULT_DIFFICULTY,
        help="interval scale: std (ensemble std) or std+novelty (x (1 + beta x novelty), "
        "novelty = 1 - max similarity to the training set, beta fitted on --data; needs the "
        "model's applicability domain; with --cv-data each molecule's novelty is measured "
        f"against its fold model's training molecules) (default {DEFAULT_DIFFICULTY})",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.training.recalibrate import recalibrate

    cv = None
    if args.cv_data is not None:
        from molprop.training.cv_calibrate import CrossValidation

        cv = CrossValidation(folds=args.cv_folds, work_dir=args.cv_work, threads=args.threads)
    result = recalibrate(
        args.model,
        args.cv_data if cv is not None else args.data,
        args.smiles_column,
        args.target_columns,
        out=args.out,
        test_data=args.test,
        cv=cv,
        difficulty=args.difficulty,
    )
    report = {k: v for k, v in result.report.items() if k != "test"}
    print(json.dumps(report, indent=2))
    if "test" in result.report:
        print(json.dumps({"test": result.report["test"]}, indent=2))
    print(
        f"recalibrated on {result.n_rows_used} molecules ({result.n_rows_invalid} rows "
        f"rejected): {result.directory} is now version {result.version}"
    )
    return 0
