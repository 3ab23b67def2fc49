"""``molprop embed``: one embedding per input row (the encoder's pooled vector that the model's
head reads; member 0 of an ensemble), in order, with status and error: columns of the input,
then ``status``, ``error``, ``emb_0`` .. ``emb_{d-1}`` (NaN for a failed row; an output column
named like an input column is ``pred_<name>``, the input column is kept). Input: CSV / TSV
(optionally .gz) with a SMILES column, SMI or SDF. Output by extension: ``.parquet`` (needs
pyarrow) or CSV (``.csv``, ``.csv.gz``, ...)."""

from __future__ import annotations

import argparse
import importlib.util
import logging
from collections import Counter
from pathlib import Path

log = logging.getLogger(__name__)

PARQUET_SUFFIXES = (".parquet", ".pq")


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="embed molecules with a model's encoder", description=__doc__)
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--input", required=True, help="CSV/TSV (optionally .gz), SMI or SDF file")
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--output", required=True, help="file to write: .parquet (needs pyarrow) or CSV")
    p.add_argument("--batch-size", type=int, default=256, help="most molecules per forward pass")
    p.add_argument(
        "--chunk-size", type=int, default=4096, help="rows read and featurised at a time"
    )
    p.set_defaults(func=run)


def is_parquet(path: str | Path) -> bool:
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def check_output(path: str | Path) -> None:
    """Refuse a parquet output without pyarrow before any work is done."""
    from molprop.errors import ConfigError

    if is_parquet(path) and importlib.util.find_spec("pyarrow") is None:
        raise ConfigError(
            f"--output {path}: writing parquet needs pyarrow, which is not installed "
            "(pip install pyarrow), or write CSV (--output FILE.csv)"
        )


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from molprop.cli.predict import same_file
    from molprop.errors import ConfigError
    from molprop.inference.predictor import Predictor
    from molprop.inference.rows import join_outputs
    from molprop.io.readers import iter_chunks
    from molprop.io.sink import write_csv

    if args.chunk_size < 1 or args.batch_size < 1:
        raise ConfigError("--chunk-size and --batch-size must be >= 1")
    if same_file(args.input, args.output):
        raise ConfigError(f"--output {args.output} would overwrite the input {args.input}")
    check_output(args.output)
    predictor = Predictor.from_pretrained(args.model)
    parts = []
    counts: Counter[str] = Counter()
    for chunk in iter_chunks(args.input, args.smiles_column, args.chunk_size):
        items = chunk.with_failures(predictor.featurize(chunk.smiles(args.smiles_column)))
        emb = predictor.embed_graphs(items, batch_size=args.batch_size)
        emb = emb[["status", "error", *[c for c in emb.columns if c not in ("status", "error")]]]
        counts.update(emb["status"].tolist())
        parts.append(join_outputs(chunk.frame, emb))  # an input column is never replaced
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    if is_parquet(args.output):
        out.to_parquet(args.output, index=False)
    else:
        write_csv(out, args.output)
    log.info("wrote %d embeddings (%d wide) to %s", len(out), predictor.embedding_dim, args.output)
    print(f"{len(out)} rows written to {args.output}: {dict(counts)}")
    return 0
