"""``molprop predict``: predictions for every row of a CSV / CSV.gz / SMI / SDF, in order, with
status and error. The input is streamed in chunks and the output written as it goes, so files
larger than memory work; ``--resume`` continues a partial output; ``--num-workers`` featurises
in worker processes."""

from __future__ import annotations

import argparse
import logging
import os

log = logging.getLogger(__name__)


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="predict with a trained model", description=__doc__)
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--input", required=True,
                   help="CSV/TSV (optionally .gz) with a SMILES column, SMI or SDF file")  # fmt: skip
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--output", required=True, help="CSV to write")
    p.add_argument("--batch-size", type=int, default=256,
                   help="most molecules per forward pass (default 256); on a CPU a pass also "
                        "stops at 4,096 padded tokens, which is faster")  # fmt: skip
    p.add_argument("--chunk-size", type=int, default=4096,
                   help="rows read, featurised and written at a time (bounds memory)")  # fmt: skip
    p.add_argument("--num-workers", type=int, default=0,
                   help="featurisation worker processes (0: in the main process)")  # fmt: skip
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run: keep the complete rows of --output")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = p.add_argument_group("several processes / machines (Lightning)")
    g.add_argument("--devices", type=int, default=1,
                   help="processes (CPU) or accelerators per machine (default 1)")  # fmt: skip
    g.add_argument("--num-nodes", type=int, default=1, help="machines (default 1)")
    g.add_argument("--strategy", default="auto",
                   help="auto (one process unless --devices/--num-nodes ask for more) or ddp")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.errors import ConfigError
    from molprop.inference.predictor import Predictor
    from molprop.inference.streaming import predict_stream

    if args.chunk_size < 1 or args.num_workers < 0:
        raise ConfigError("--chunk-size must be >= 1 and --num-workers >= 0")
    if args.devices < 1 or args.num_nodes < 1:
        raise ConfigError("--devices and --num-nodes must be >= 1")
    predictor = Predictor.from_pretrained(args.model)
    reader = getattr(predictor.featurizer, "predict_file", None)
    structure_file = reader is not None and not args.input.endswith((".csv", ".csv.gz"))
    distributed = args.devices * args.num_nodes > 1 or args.strategy != "auto"
    progress = not (args.no_progress or os.environ.get("MOLPROP_NO_PROGRESS"))
    if distributed and structure_file:
        raise ConfigError("several processes are supported for SMILES inputs (CSV / SMI / SDF); "
                          "structure files are predicted in one process")  # fmt: skip
    if distributed:
        from molprop.inference.distributed import predict_distributed

        summary = predict_distributed(
            predictor, args.input, args.output, args.smiles_column,
            devices=args.devices, num_nodes=args.num_nodes,
            strategy="ddp" if args.strategy == "auto" else args.strategy,
            batch_size=args.batch_size, chunk_size=args.chunk_size,
            num_workers=args.num_workers, resume=args.resume, progress=progress,
        )  # fmt: skip
        if summary is None:  # not global rank 0: rank 0 merges and reports
            return 0
        counts, n = summary.status, summary.rows_total
    elif structure_file:
        out = reader(predictor, args.input, batch_size=args.batch_size)
        out.to_csv(args.output, index=False)
        counts = out["status"].value_counts().to_dict()
        n = len(out)
    else:
        summary = predict_stream(
            predictor, args.input, args.output, args.smiles_column,
            batch_size=args.batch_size, chunk_size=args.chunk_size,
            num_workers=args.num_workers, resume=args.resume, progress=progress,
        )  # fmt: skip
        counts, n = summary.status, summary.rows_total
    log.info("wrote %d rows to %s (%s)", n, args.output, counts)
    print(f"{n} rows written to {args.output}: {counts}")
    return 0
