"""``molprop split-fidelity``: low-fidelity pretraining set + high-fidelity train/val/test,
transductive or inductive (molecules compared by InChIKey; the leak check raises)."""

from __future__ import annotations

import argparse
import json


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name, help="build a low/high-fidelity transfer-learning split", description=__doc__
    )
    p.add_argument("--data", required=True, help="CSV with SMILES, low and high label columns")
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--low-column", required=True, help="low-fidelity label (e.g. DFT)")
    p.add_argument("--high-column", required=True, help="high-fidelity label (e.g. GW, CC2)")
    p.add_argument(
        "--high-sizes",
        nargs=3,
        type=float,
        required=True,
        metavar=("TRAIN", "VAL", "TEST"),
        help="high-fidelity molecule counts (or fractions if all < 1)",
    )
    p.add_argument("--mode", choices=["transductive", "inductive"], required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="directory for pretrain/train/val/test.csv")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.transfer.fidelity_split import build_fidelity_split

    split = build_fidelity_split(
        args.data,
        args.smiles_column,
        args.low_column,
        args.high_column,
        args.high_sizes,
        args.mode,
        args.seed,
    )
    split.write(args.out)
    summary = {"molecules": split.report["molecules"], "check": split.report["check"]}
    print(json.dumps(summary, indent=2))
    print(f"split written to {args.out}")
    return 0
