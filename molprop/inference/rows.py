"""Per-row status: what each prediction row says, in DataFrames, CLI output and the service.

Every input row gets one output row with ``status`` and ``error``:

* ``ok`` — predicted; ``error`` is empty;
* ``invalid_input`` — the input cannot be used (unparsable SMILES, a molecule over a size
  limit, an unreadable record: an :class:`~molprop.errors.InvalidInputError`); ``error`` says
  why and the prediction columns are NaN;
* ``unsupported`` — a valid molecule the model does not cover: inorganic (no
  carbon-containing fragment), a metal complex or organometallic, or an element never seen in
  the model's training set (the chemistry checks of :mod:`molprop.chem.standardize`, an
  :class:`~molprop.errors.UnsupportedMoleculeError`); ``error`` names the element or the
  reason and there is no prediction;
* ``error`` — anything else went wrong for that row (an unexpected featuriser exception, a model
  failure, a non-finite model output); ``error`` says what.

Where a row has no prediction (every status but ``ok``), its prediction columns are NaN and
``in_domain`` is missing (``pd.NA`` in the DataFrame's nullable ``boolean`` column, an empty
CSV cell, ``null`` in JSON).

Output columns never replace input columns (:func:`join_outputs`, the one place input rows and
predictions are put side by side: ``molprop predict``, ``molprop embed``, the service's jobs).
An output column whose name an input column already has (a measured ``logp`` next to the
predicted one, an input ``status`` or ``error``, ...) is written as ``pred_<name>``, the prefix
repeated until the name is free (``pred_pred_logp`` when the input has both ``logp`` and
``pred_logp``); the input columns come first, unchanged.

:class:`RowPrediction` reads one row of a :class:`~molprop.inference.Predictor` frame back as
typed fields (value, spread, domain, calibrated interval, status, error); the service builds
its results from it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from molprop.errors import InvalidInputError, UnsupportedMoleculeError

#: put before an output column's name while an input column has that name
OUTPUT_PREFIX = "pred_"

STATUS_OK, STATUS_INVALID, STATUS_ERROR = "ok", "invalid_input", "error"
STATUS_UNSUPPORTED = "unsupported"
#: Every status a row can have.
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_INVALID, STATUS_UNSUPPORTED, STATUS_ERROR)


def failure_status(exc: BaseException) -> str:
    """The status of a row that failed with ``exc``: ``unsupported`` for a molecule the model
    does not cover (:class:`UnsupportedMoleculeError`), ``invalid_input`` for other bad input
    (:class:`InvalidInputError`), ``error`` for anything else."""
    if isinstance(exc, UnsupportedMoleculeError):
        return STATUS_UNSUPPORTED
    return STATUS_INVALID if isinstance(exc, InvalidInputError) else STATUS_ERROR


def split_failures(items: Sequence[object]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Featurised rows (an Exception marks a failed row) -> ((n,) status, (n,) error, the
    indices of the rows that are not failures): ``ok`` / "" for those, the exception's
    :func:`failure_status` and message for the others."""
    status = np.full(len(items), STATUS_OK, dtype=object)
    error = np.full(len(items), "", dtype=object)
    ok = []
    for i, item in enumerate(items):
        if isinstance(item, Exception):
            status[i], error[i] = failure_status(item), str(item)
        else:
            ok.append(i)
    return status, error, ok


def _finite_or_none(value: object) -> float | None:
    out = float(value)  # type: ignore[arg-type]
    return out if math.isfinite(out) else None


@dataclass(frozen=True)
class RowPrediction:
    """One prediction row as typed fields. ``value`` is None exactly when ``status`` is not
    ``ok``; ``std`` (spread of an ensemble's members) and ``in_domain`` are None when the model
    has none or the row failed; ``interval`` is ``(level, low, high)``, the calibrated
    prediction interval, or None (no interval asked for, a model without calibration, a
    classifier, a failed row); ``error`` is None when ok; ``standardized_smiles``: the SMILES
    the model read after the chemistry checks (None where the input could not be
    standardised)."""

    status: str
    value: float | None = None
    std: float | None = None
    in_domain: bool | None = None
    error: str | None = None
    interval: tuple[float, float, float] | None = None
    standardized_smiles: str | None = None
    #: the value's percentile among the model's predictions for approved drugs (None: the
    #: model stores none, or the row failed)
    percentile: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    @classmethod
    def failed(cls, exc: BaseException) -> RowPrediction:
        """A row that failed before prediction with ``exc`` (see :func:`failure_status`)."""
        return cls(
            status=failure_status(exc),
            error=str(exc),
            standardized_smiles=getattr(exc, "smiles", None),
        )

    @classmethod
    def from_frame_row(
        cls, row: Mapping[str, object], target: str, level: float | None = None
    ) -> RowPrediction:
        """One row of a Predictor frame (``row``: column -> value, e.g. from
        ``frame.to_dict("records")``) for the target column ``target``; ``level``: the interval
        level the frame was predicted with (its ``<target>_low`` / ``_high`` columns)."""
        status = str(row["status"])
        standardized = row.get("standardized_smiles")
        standardized = standardized if isinstance(standardized, str) and standardized else None
        if status != STATUS_OK:
            return cls(
                status=status, error=str(row["error"]) or None, standardized_smiles=standardized
            )
        std = row.get(f"{target}_std")
        percentile = row.get(f"{target}_percentile")
        in_domain = row.get("in_domain")
        low, high = row.get(f"{target}_low"), row.get(f"{target}_high")
        interval = None
        if level is not None and low is not None and high is not None:
            low, high = _finite_or_none(low), _finite_or_none(high)
            if low is not None and high is not None:
                interval = (float(level), low, high)
        return cls(
            status=STATUS_OK,
            value=float(row[target]),  # type: ignore[arg-type]
            std=None if std is None else _finite_or_none(std),
            in_domain=None if in_domain is None or in_domain is pd.NA else bool(in_domain),
            interval=interval,
            standardized_smiles=standardized,
            percentile=None if percentile is None else _finite_or_none(percentile),
        )


def output_name(name: str, taken: Collection[str]) -> str:
    """``name``, prefixed with :data:`OUTPUT_PREFIX` as often as needed to be none of
    ``taken`` (the input's column names)."""
    while name in taken:
        name = OUTPUT_PREFIX + name
    return name


def join_outputs(inputs: pd.DataFrame, outputs: pd.DataFrame) -> pd.DataFrame:
    """The input columns, unchanged, then the output columns (row i beside row i), each output
    column renamed by :func:`output_name` when an input column (or an output column renamed
    before it) has its name: a prediction never replaces an input column."""
    if len(inputs) != len(outputs):
        raise ValueError(f"{len(inputs)} input rows but {len(outputs)} output rows")
    taken = {str(c) for c in inputs.columns}
    names = []
    for col in outputs.columns:
        name = output_name(str(col), taken)
        taken.add(name)
        names.append(name)
    outputs = outputs.set_axis(names, axis=1).reset_index(drop=True)
    return pd.concat([inputs.reset_index(drop=True), outputs], axis=1)


__all__ = [
    "OUTPUT_PREFIX",
    "STATUSES",
    "STATUS_ERROR",
    "STATUS_INVALID",
    "STATUS_OK",
    "STATUS_UNSUPPORTED",
    "RowPrediction",
    "failure_status",
    "join_outputs",
    "output_name",
]
