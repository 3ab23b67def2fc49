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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from molprop.inference.files import FileOptions

log = logging.getLogger(__name__)


def run_panel(args: argparse.Namespace, options: FileOptions) -> int:
    """Predict ``args.input`` with the panel ``args.model`` into ``args.output`` (``options``:
    ``args`` as :func:`molprop.cli.predict.file_options` reads them)."""
    from molprop.errors import ConfigError
    from molprop.inference.files import predict_panel_file
    from molprop.inference.panel import Panel
    from molprop.inference.panel_pool import PanelPool
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
    for line in panel.coverage_warnings(args.interval):
        log.warning("%s", line)
    with PanelPool(panel, args.model, args.backend, args.num_workers) as pool:
        table, counts = predict_panel_file(panel, args.input, options, pool.predict)
    staged = stage_output(args.output, resume=False)
    write_csv(table, staged, compression=options.compression)
    commit_output(staged, args.output)
    log.info("wrote %d rows to %s (%s)", len(table), args.output, dict(counts))
    print(f"{len(table)} rows written to {args.output} (panel {panel.name}): {dict(counts)}")
    return 0
