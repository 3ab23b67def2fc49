"""``molprop calibrate``: recalibrate a trained model on your own labelled data (e.g. an
in-house assay) and write a new version of the artifact. The weights never change: only the
conformal intervals (regression) or the Platt scaling (classification) are refitted, on every
valid, labelled row of ``--data``.

``--out DIR``: the artifact is copied to DIR (new or empty) and the copy recalibrated; the
original is left untouched. Without ``--out`` the artifact given as a path (``./my_model``) is
recalibrated in place and its previous calibration kept as ``calibration.v<old version>.json``;
a model given by name (a shipped one) needs ``--out``. The ``version`` in ``config.json`` goes
up by one; ``metrics.json`` and the card describe the new calibration (its coverage on
``--test`` when given, a labelled table not used to fit)."""

from __future__ import annotations

import argparse
import json


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name,
        help="recalibrate a model's intervals / probabilities on labelled data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--data", required=True, help="labelled CSV (or SDF / extxyz for 3D models)")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.training.calibrate import recalibrate

    result = recalibrate(
        args.model,
        args.data,
        args.smiles_column,
        args.target_columns,
        out=args.out,
        test_data=args.test,
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
