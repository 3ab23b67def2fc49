"""``molprop physchem``: RDKit physicochemical properties, drug-likeness rules (Lipinski, Veber)
and structural alerts (PAINS, Brenk, NIH) per input row, no model
(:mod:`molprop.inference.physchem`). Input: CSV / TSV (optionally .gz) with a SMILES column, SMI or
SDF, or ``--smiles``. Output CSV: the input's columns, then the described SMILES, properties,
rules, alerts, ``status`` and ``error`` (``pred_<name>`` for an output named like an input
column; spreadsheet-safe text cells); one row per input row, in order."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name, help="physicochemical properties and structural alerts", description=__doc__
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="CSV/TSV (optionally .gz), SMI or SDF file")
    source.add_argument("--smiles", nargs="+", help="SMILES on the command line")
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--output", required=True, help="CSV file to write")
    p.add_argument("--chunk-size", type=int, default=4096, help="rows read at a time")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from molprop.cli.predict import same_file
    from molprop.errors import ConfigError
    from molprop.inference.physchem import physchem_frame
    from molprop.inference.rows import join_outputs
    from molprop.io.readers import iter_chunks
    from molprop.io.sink import write_csv

    if args.chunk_size < 1:
        raise ConfigError("--chunk-size must be >= 1")
    if args.input and same_file(args.input, args.output):
        raise ConfigError(f"--output {args.output} would overwrite the input {args.input}")
    parts = []
    if args.smiles:
        given = pd.DataFrame({"smiles": args.smiles})
        parts.append(join_outputs(given, physchem_frame(args.smiles)))
    else:
        for chunk in iter_chunks(args.input, args.smiles_column, args.chunk_size):
            described = physchem_frame(chunk.smiles(args.smiles_column))
            for i, exc in chunk.failures.items():  # rows the reader could not read
                described.loc[i, :] = pd.NA
                described.loc[i, ["status", "error"]] = ["invalid_input", str(exc)]
            parts.append(join_outputs(chunk.frame.reset_index(drop=True), described))
    out = pd.concat(parts, ignore_index=True)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_csv(out, args.output)
    counts = out["status"].value_counts().to_dict()
    print(f"{len(out)} rows written to {args.output}: {counts}")
    return 0
