"""``molprop predict``: predictions for every row of a CSV / CSV.gz / SMI / SDF, in order, with
status and error. The input is streamed in chunks and the output written as it goes, so files
larger than memory work; ``--resume`` continues a partial output; ``--num-workers`` featurises
in worker processes.

The rows go to ``<output>.partial`` in the output's directory, renamed to ``--output`` when the
run has finished: an existing output is replaced only by a complete one, and a failed or killed
run leaves it as it was (``--resume`` continues the ``.partial`` file). ``--output`` may not be
the input file. Every input line is a row (blank lines: ``invalid_input``); a CSV row whose
field count differs from the header's stops the run with its line number; every SDF record is a
row (an unreadable one: ``invalid_input``).

The input columns come first and are never replaced: an output column named like one of them
(e.g. a measured ``logp``) is written as ``pred_<name>``. Text cells that a spreadsheet would
run as a formula (starting with =, +, -, @) are written with a leading ' (numbers as they are).

``--model`` may name a panel (``admet``: several models answered together, one wide row per
input row with every endpoint's value, unit, spread, interval, percentile and domain, then the
RDKit physchem block; see ``molprop.cli.predict_panel``)."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from molprop.inference.files import FileOptions

log = logging.getLogger(__name__)
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="predict with a trained model", description=__doc__)
    p.add_argument(
        "--model",
        required=True,
        help="artifact directory or shipped model name; or a panel (e.g. admet: several "
        "models, one wide row per input)",
    )
    p.add_argument(
        "--input",
        required=True,
        help="CSV/TSV (optionally .gz) with a SMILES column, SMI or SDF file; for a 3D model "
        "also a structure file (extxyz, SDF, ...: one row per record, its own coordinates)",
    )
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument(
        "--output", required=True, help="CSV to write (via <output>.partial, renamed when complete)"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=256,
        help="most molecules per forward pass (default 256); on a CPU a pass also "
        "stops at 4,096 padded tokens, which is faster",
    )
    p.add_argument(
        "--chunk-size",
        type=int,
        default=4096,
        help="rows read, featurised and written at a time (bounds memory)",
    )
    p.add_argument(
        "--num-workers",
        type=int,
        default=0,
        help="featurisation worker processes (0: in the main process)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run: keep the complete rows of "
        "<output>.partial (or of --output if there is no .partial)",
    )
    p.add_argument(
        "--interval",
        type=interval_arg,
        default=0.9,
        help="level of the calibrated prediction interval, columns <target>_low and "
        "<target>_high (default 0.9; 0 or none: no interval). Regression models with a "
        "calibration only; see the model card",
    )
    p.add_argument(
        "--low-column",
        nargs="+",
        default=None,
        metavar="COL",
        help="input column(s) with the measured low-fidelity label(s), one per label the "
        "model was trained on (transfer models trained on measured labels need them; a "
        "missing or non-numeric value makes that row invalid_input)",
    )
    p.add_argument(
        "--backend",
        choices=["torch", "onnxruntime"],
        default="torch",
        help="run the members with torch (default) or their ONNX export on ONNX Runtime "
        "(CPU; see `molprop export`)",
    )
    p.add_argument("--onnx", default=None, help="where the ONNX export is (default: <model>/onnx/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = p.add_argument_group("several processes / machines (Lightning)")
    g.add_argument(
        "--devices",
        type=int,
        default=1,
        help="processes (CPU) or accelerators per machine (default 1)",
    )
    g.add_argument("--num-nodes", type=int, default=1, help="machines (default 1)")
    g.add_argument(
        "--strategy",
        default="auto",
        help="auto (one process unless --devices/--num-nodes ask for more) or ddp",
    )
    p.set_defaults(func=run)


def interval_arg(text: str) -> float | None:
    """``--interval``: a level in (0, 1), or 0 / none / off for no interval."""
    from molprop.errors import ConfigError
    from molprop.inference.intervals import interval_level

    try:
        return interval_level(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when ``a`` and ``b`` name the same file (links and relative paths resolved)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def file_options(args: argparse.Namespace) -> FileOptions:
    """The options of ``args`` for :func:`molprop.inference.files.predict_file`."""
    from molprop.inference.files import FileOptions

    suffix = Path(args.output).suffix.lower()  # compression as pandas infers it
    return FileOptions(
        smiles_column=args.smiles_column,
        batch_size=args.batch_size,
        chunk_size=args.chunk_size,
        num_workers=args.num_workers,
        resume=args.resume,
        progress=not (args.no_progress or os.environ.get("MOLPROP_NO_PROGRESS")),
        interval=args.interval,
        low_columns=args.low_column,
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        compression=_COMPRESSION.get(suffix),
    )


def run(args: argparse.Namespace) -> int:
    from molprop.artifact.resolve import is_panel
    from molprop.errors import ConfigError
    from molprop.inference.files import check_file, predict_file
    from molprop.inference.intervals import coverage_warnings
    from molprop.inference.predictor import Predictor
    from molprop.io.sink import commit_output, partial_path, stage_output

    if args.chunk_size < 1 or args.num_workers < 0:
        raise ConfigError("--chunk-size must be >= 1 and --num-workers >= 0")
    if args.devices < 1 or args.num_nodes < 1:
        raise ConfigError("--devices and --num-nodes must be >= 1")
    for target in (args.output, partial_path(args.output)):
        if same_file(args.input, target):
            raise ConfigError(
                f"--output {args.output} would overwrite the input {args.input}; "
                "choose another output file"
            )
    if is_panel(args.model):  # several models answered together: one wide row per input
        from molprop.cli.predict_panel import run_panel

        return run_panel(args, file_options(args))
    options = file_options(args)
    if args.backend != "torch" and options.distributed:
        raise ConfigError("--backend onnxruntime runs in one process (no --devices/--num-nodes)")
    predictor = Predictor.from_pretrained(args.model, backend=args.backend, onnx=args.onnx)
    check_file(predictor, args.input, options)  # refusals before any output is written
    for line in coverage_warnings(predictor.interval_coverage(), args.interval, args.model):
        log.warning("%s", line)
    staged = stage_output(args.output, args.resume)
    try:
        counts, n = predict_file(predictor, args.input, staged, options)
    except BaseException:
        if staged.exists():
            log.warning(
                "%s is unchanged; the rows predicted so far are in %s (--resume "
                "continues from them)",
                args.output,
                staged,
            )
        raise
    if n is None:  # not global rank 0: rank 0 merges, renames and reports
        return 0
    commit_output(staged, args.output)
    log.info("wrote %d rows to %s (%s)", n, args.output, counts)
    print(f"{n} rows written to {args.output}: {counts}")
    return 0
