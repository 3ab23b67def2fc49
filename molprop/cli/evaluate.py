"""``molprop evaluate``: metrics of a trained model on a labelled CSV (printed and JSON)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="evaluate a model on labelled data", description=__doc__)
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--data", required=True)
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument(
        "--target-columns",
        nargs="+",
        default=None,
        help="label columns, in the model's target order (default: the model's names)",
    )
    p.add_argument("--output", default=None, help="metrics JSON (default: <data>.metrics.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.training.evaluate import evaluate_file

    result = evaluate_file(args.model, args.data, args.smiles_column, args.target_columns)
    output = Path(args.output or f"{Path(args.data).name}.metrics.json")
    output.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print(f"metrics written to {output}")
    return 0
