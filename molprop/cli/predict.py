"""``molprop predict``: predictions for every row of a CSV, in order, with status and error."""

from __future__ import annotations

import argparse
import logging

log = logging.getLogger(__name__)


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="predict with a trained model", description=__doc__)
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--input", required=True, help="CSV with a SMILES column (or structure file)")
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--output", required=True, help="CSV to write")
    p.add_argument("--batch-size", type=int, default=256)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.data.table import read_table, require_columns
    from molprop.inference.predictor import Predictor

    predictor = Predictor.from_pretrained(args.model)
    reader = getattr(predictor.featurizer, "predict_file", None)
    if reader is not None and not args.input.endswith((".csv", ".csv.gz")):
        out = reader(predictor, args.input, batch_size=args.batch_size)
    else:
        frame = read_table(args.input)
        require_columns(frame, [args.smiles_column], args.input)
        out = predictor.predict_frame(frame, args.smiles_column, args.batch_size)
    out.to_csv(args.output, index=False)
    counts = out["status"].value_counts().to_dict()
    log.info("wrote %d rows to %s (%s)", len(out), args.output, counts)
    print(f"{len(out)} rows written to {args.output}: {counts}")
    return 0
