"""Evaluate an artifact on a labelled table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from molprop.errors import DataError, InvalidInputError
from molprop.inference import STATUS_OK, Predictor
from molprop.io.table import parse_target, read_table, require_columns
from molprop.training.metrics import compute_metrics


def evaluate_file(
    model: str | Path,
    data: str | Path,
    smiles_column: str = "smiles",
    target_columns: Sequence[str] | None = None,
) -> dict:
    """Metrics (ensemble mean) on every valid, labelled row; invalid rows are counted."""
    predictor = Predictor.from_pretrained(model)
    names = predictor.target_names
    columns = list(target_columns or names)
    if len(columns) != len(names):
        raise DataError(f"model predicts {len(names)} target(s) {names}; got columns {columns}")
    frame = read_table(data)
    require_columns(frame, [smiles_column, *columns], data)
    preds = predictor.predict_frame(frame[[smiles_column]], smiles_column)
    y = np.full((len(frame), len(columns)), np.nan)
    bad_label = np.zeros(len(frame), dtype=bool)
    for j, col in enumerate(columns):
        for i, v in enumerate(frame[col].tolist()):
            try:
                y[i, j] = parse_target(v, col)
            except InvalidInputError:
                bad_label[i] = True
    ok = (preds["status"] == STATUS_OK).to_numpy() & ~bad_label
    p = preds[names].to_numpy(dtype=float)
    metrics = compute_metrics(y[ok], p[ok], predictor.task_type, names)
    return {
        "model": str(predictor.directory),
        "data": str(data),
        "target_columns": columns,
        "metrics": metrics,
        "n_rows": len(frame),
        "n_evaluated": int(ok.sum()),
        "n_invalid": int((~ok).sum()),
    }
