"""Files in, files out: the one call behind ``molprop predict`` for a model or a panel.

:func:`predict_file` runs the prediction pipeline (:mod:`molprop.inference.pipeline`) over every
row of an input file into a staged output, driven the way the input asks:

* a structure file (extxyz, SDF, ...) for a model with the 3D featuriser: one row per record,
  its own coordinates (:meth:`~molprop.inference.Predictor.predict_structure_file`);
* several processes or machines (``devices`` x ``num_nodes`` > 1, or a Lightning strategy):
  chunks shared among the ranks (:mod:`molprop.inference.distributed`);
* otherwise chunk by chunk in this process, featurisation optionally in worker processes
  (:mod:`molprop.inference.streaming`).

:func:`predict_panel_file` answers a panel (:class:`~molprop.inference.Panel`) chunk by chunk,
one wide row per input row. Every driver predicts each chunk with the same stages, so a row's
output does not depend on the driver (a structure file reads coordinates, not SMILES).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pandas as pd

from molprop.artifact.calibration import DEFAULT_LEVEL
from molprop.chem.structures import is_structure_path
from molprop.errors import ConfigError, DataError
from molprop.inference.panel import Panel
from molprop.inference.predictor import Predictor
from molprop.inference.rows import failure_status, join_outputs
from molprop.io.readers import iter_chunks
from molprop.io.sink import write_csv

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileOptions:
    """How one input file is predicted (``molprop predict``'s options)."""

    smiles_column: str = "smiles"
    batch_size: int = 256
    chunk_size: int = 4096
    #: featurisation worker processes (0: in this process)
    num_workers: int = 0
    #: continue a partial output (its complete rows are kept)
    resume: bool = False
    progress: bool = True
    interval: float | str | None = DEFAULT_LEVEL
    #: input columns with the measured low-fidelity labels a transfer model may need
    low_columns: Sequence[str] | None = None
    devices: int = 1
    num_nodes: int = 1
    #: ``auto`` (one process unless devices / num_nodes ask for more) or a Lightning strategy
    strategy: str = "auto"
    #: compression of a structure file's output (the streamed output is plain CSV)
    compression: str | None = None

    @property
    def distributed(self) -> bool:
        return self.devices * self.num_nodes > 1 or self.strategy != "auto"


def structure_input(predictor: Predictor, input_path: str | Path) -> bool:
    """True when ``input_path`` is read as structures (a 3D model and a structure file); SMILES
    inputs, and an SDF for a 2D model (SMILES + properties), are streamed."""
    return predictor.reads_structures and is_structure_path(input_path)


def check_file(predictor: Predictor, input_path: str | Path, options: FileOptions) -> None:
    """The refusals of :func:`predict_file`, before any output is written: a level the
    calibration cannot serve, a model that needs measured low-fidelity labels without them,
    options the chosen driver does not take."""
    predictor.interval_level(options.interval)
    predictor.refuse_without_low(bool(options.low_columns))
    if predictor.backend != "torch" and options.distributed:
        raise ConfigError("--backend onnxruntime runs in one process (no --devices/--num-nodes)")
    structures = structure_input(predictor, input_path)
    if options.distributed and structures:
        raise ConfigError(
            "several processes are supported for SMILES inputs (CSV / SMI / SDF); "
            "structure files are predicted in one process"
        )
    if options.low_columns and (options.distributed or structures):
        raise ConfigError("--low-column works with single-process table prediction")


def predict_file(
    predictor: Predictor, input_path: str | Path, staged: Path, options: FileOptions
) -> tuple[dict[str, int], int | None]:
    """Predict every row of ``input_path`` into ``staged`` (see the module docstring) ->
    (status counts, rows); rows None on the ranks other than 0 of a distributed run (rank 0
    writes the output)."""
    from molprop.inference.streaming import predict_stream

    check_file(predictor, input_path, options)
    if options.distributed:
        from molprop.inference.distributed import predict_distributed

        summary = predict_distributed(
            predictor,
            input_path,
            staged,
            options.smiles_column,
            devices=options.devices,
            num_nodes=options.num_nodes,
            strategy="ddp" if options.strategy == "auto" else options.strategy,
            batch_size=options.batch_size,
            chunk_size=options.chunk_size,
            num_workers=options.num_workers,
            resume=options.resume,
            progress=options.progress,
            interval=options.interval,
        )
        if summary is None:  # not global rank 0
            return {}, None
        return summary.status, summary.rows_total
    if structure_input(predictor, input_path):
        out = predictor.predict_structure_file(
            input_path, batch_size=options.batch_size, interval=options.interval
        )
        write_csv(out, staged, compression=options.compression)
        return cast(dict[str, int], out["status"].value_counts().to_dict()), len(out)
    summary = predict_stream(
        predictor,
        input_path,
        staged,
        options.smiles_column,
        batch_size=options.batch_size,
        chunk_size=options.chunk_size,
        num_workers=options.num_workers,
        resume=options.resume,
        progress=options.progress,
        interval=options.interval,
        low_columns=options.low_columns,
    )
    return summary.status, summary.rows_total


def predict_panel_file(
    panel: Panel,
    input_path: str | Path,
    options: FileOptions,
    predict: Callable[[list[str], float | str | None, int], pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, Counter[str]]:
    """Every model of ``panel`` on every row of ``input_path`` (CSV / CSV.gz / SMI / SDF), chunk
    by chunk -> (the input's columns then the panel's, one row per input row; status counts).
    A record the reader could not read is its row's failure for every endpoint. ``predict``:
    answers a chunk's SMILES like :meth:`Panel.predict` (default), e.g. a
    :class:`~molprop.inference.panel_pool.PanelPool`'s worker processes."""
    predict = predict or panel.predict
    panel.check_interval(options.interval)  # a level some model cannot serve: stop now
    parts = []
    counts: Counter[str] = Counter()
    for chunk in iter_chunks(input_path, options.smiles_column, options.chunk_size):
        out = predict(chunk.smiles(options.smiles_column), options.interval, options.batch_size)
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
        raise DataError(f"{input_path} has no rows")
    return pd.concat(parts, ignore_index=True), counts


__all__ = [
    "FileOptions",
    "check_file",
    "predict_file",
    "predict_panel_file",
    "structure_input",
]
