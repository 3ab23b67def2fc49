"""``molprop explain``: which atoms drive a prediction (Integrated Gradients on the token
embedding layer, see ``molprop.inference.explain``).

Writes to ``--out``: ``atoms.csv`` (one row per atom: molecule, smiles, atom_index, element,
weight), ``molecules.csv`` (one row per input: status, error, value, the explained prediction,
baseline, sum of weights, completeness delta) and per explained molecule ``mol_<k>.svg`` and
``mol_<k>.png`` (RDKit similarity maps; k = input row). A bad SMILES is its row's
``invalid_input`` in molecules.csv, never a stop. Regression weights are in target units,
classifier weights in logits."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="per-atom attributions of predictions", description=__doc__)
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--smiles", nargs="+", help="one or more SMILES")
    src.add_argument("--input", help="CSV/TSV (optionally .gz) with a SMILES column")
    p.add_argument("--smiles-column", default="smiles", help="SMILES column of --input")
    p.add_argument("--out", required=True, help="directory to write (created if needed)")
    p.add_argument("--target", default=None, help="target to explain (default: the first)")
    p.add_argument(
        "--layer",
        choices=["input", "embedding"],
        default="input",
        help="integrate over the embedding layer's input (token features, default: ESA bond "
        "tokens resolved onto their atoms) or output (token embeddings, bond split half-half)",
    )
    p.add_argument("--steps", type=int, default=64, help="initial integration steps (default 64)")
    p.add_argument("--size", type=int, nargs=2, default=[400, 300], metavar=("W", "H"))
    p.add_argument("--no-pictures", action="store_true", help="write only the CSV files")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from molprop.errors import ConfigError
    from molprop.inference.explain import atoms_frame, molecules_frame
    from molprop.inference.predictor import Predictor
    from molprop.io.sink import write_csv

    if args.steps < 2:
        raise ConfigError("--steps must be >= 2")
    if args.input is not None:
        frame = pd.read_csv(args.input, sep=None, engine="python", dtype=str, keep_default_na=False)
        if args.smiles_column not in frame.columns:
            raise ConfigError(
                f"{args.input} has no column {args.smiles_column!r} "
                f"(columns: {list(frame.columns)}); set --smiles-column"
            )
        smiles = frame[args.smiles_column].tolist()
    else:
        smiles = list(args.smiles)
    predictor = Predictor.from_pretrained(args.model)
    explanations = predictor.explain(
        smiles, target=args.target, layer=args.layer, n_steps=args.steps
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(atoms_frame(explanations), out / "atoms.csv")
    write_csv(molecules_frame(explanations), out / "molecules.csv")
    size = (int(args.size[0]), int(args.size[1]))
    if not args.no_pictures:
        for k, e in enumerate(explanations):
            if e.ok:
                (out / f"mol_{k}.svg").write_text(e.svg(size))
                (out / f"mol_{k}.png").write_bytes(e.png(size))
    counts = pd.Series([e.status for e in explanations]).value_counts().to_dict()
    incomplete = sum(1 for e in explanations if e.ok and not e.complete)
    if incomplete:
        log.warning("%d molecules miss the 1 %% completeness tolerance", incomplete)
    print(f"{len(explanations)} molecules explained into {out}: {counts}")
    return 0
