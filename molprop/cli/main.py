"""``molprop`` console script: one module per subcommand, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import signal
import sys

from molprop import __version__
from molprop.errors import MolpropError, TrainingInterrupted

#: subcommand name -> module in molprop.cli
SUBCOMMANDS: dict[str, str] = {
    "train": "molprop.cli.train",
    "predict": "molprop.cli.predict",
    "evaluate": "molprop.cli.evaluate",
    "calibrate": "molprop.cli.calibrate",
    "explain": "molprop.cli.explain",
    "embed": "molprop.cli.embed",
    "physchem": "molprop.cli.physchem",
    "worker": "molprop.cli.worker",
    "export": "molprop.cli.export",
    "hpopt": "molprop.cli.hpopt",
    "foundation": "molprop.cli.foundation",
}


def _optional_subcommands() -> dict[str, str]:
    """Subcommands contributed by other modules (transfer learning, ...), if present."""
    extra = {
        "pretrain": "molprop.cli.pretrain",
        "finetune": "molprop.cli.finetune",
        "split-fidelity": "molprop.cli.split_fidelity",
        "transfer-benchmark": "molprop.cli.transfer_benchmark",
    }
    found = {}
    for name, module in extra.items():
        if importlib.util.find_spec(module) is not None:
            found[name] = module
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="molprop", description="Molecular property prediction with ESA/NSA graph attention."
    )
    parser.add_argument("--version", action="version", version=f"molprop {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in {**SUBCOMMANDS, **_optional_subcommands()}.items():
        importlib.import_module(module).add_parser(sub, name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except MolpropError as exc:
        print(f"molprop {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except TrainingInterrupted as exc:
        print(f"molprop {args.command}: interrupted: {exc}", file=sys.stderr)
        return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main())
