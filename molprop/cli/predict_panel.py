"""``molprop predict --model <panel>``: every model of a panel (``admet``, or the path of a panel
file) on every row of a CSV / CSV.gz / SMI / SDF, one wide row per input row, in order
(columns: :mod:`molprop.inference.panel`).

The input's columns come first and are never replaced (``pred_<name>`` for an output named like
one of them); an SDF record that cannot be read is its row's ``invalid_input`` with the
reader's reason. The rows go to ``<output>.partial``, renamed to ``--output`` when complete.
``--num-workers N`` answers the rows in N worker processes, each with the whole panel
(:mod:`molprop.inference.panel_pool`). Streaming options of single models (``--resume``,
several devices, ``--low-column``, ``--onnx``) are refused.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}


def run_panel(args: argparse.Namespace) -> int:
    """Predict ``args.input`` with the panel ``args.model`` into ``args.output``."""
    from collections import Counter

    import pandas as pd

    from molprop.errors import ConfigError, DataError
    from molprop.inference.panel import Panel
    from molprop.inference.panel_pool import PanelPool
    from molprop.inference.rows import failure_status, join_outputs
    from molprop.io.readers import iter_chunks
    from molprop.io.sink import commit_output, stage_output, write_csv

    refused = {
        "--resume": args.resume,
        "--devices / --num-nodes / --strategy": (
            args.devices * args.num_nodes > 1 or args.strategy != "auto"
        ),
        "--low-column": bool(args.low_column),
        "--onnx": args.onnx is not None,
    }
    given = [flag for flag, on in refused.items() if on]
    if given:
        raise ConfigError(
            f"{args.model!r} is a panel: {', '.join(given)} (single models only) not supported"
        )
    panel = Panel.from_name(args.model, backend=args.backend)
    panel.check_interval(args.interval)  # a level some model cannot serve: stop now
    parts = []
    counts: Counter[str] = Counter()
    with PanelPool(panel, args.model, args.backend, args.num_workers) as pool:
        for chunk in iter_chunks(args.input, args.smiles_column, args.chunk_size):
            out = pool.predict(chunk.smiles(args.smiles_column), args.interval, args.batch_size)
            for i, exc in chunk.failures.items():  # records the reader could not read
                for prefix in ("", *(f"{t}_" for t in panel.target_names)):
                    if f"{prefix}status" in out.columns:
                        out.loc[i, [f"{prefix}status", f"{prefix}error"]] = [
                            failure_status(exc),
                            str(exc),
                        ]
            counts.update(out["status"].tolist())
            parts.append(join_outputs(chunk.frame, out.drop(columns="smiles")))
            log.info("panel %s: %d rows predicted", panel.name, chunk.start + len(chunk))
    if not parts:
        raise DataError(f"{args.input} has no rows")
    table = pd.concat(parts, ignore_index=True)
    staged = stage_output(args.output, resume=False)
    suffix = Path(args.output).suffix.lower()  # compression as pandas infers it
    write_csv(table, staged, compression=_COMPRESSION.get(suffix))
    commit_output(staged, args.output)
    log.info("wrote %d rows to %s (%s)", len(table), args.output, dict(counts))
    print(f"{len(table)} rows written to {args.output} (panel {panel.name}): {dict(counts)}")
    return 0
