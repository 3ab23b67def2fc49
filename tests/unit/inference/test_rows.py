"""Per-row status semantics (molprop.inference.rows): which failure is which status, and one
Predictor frame row read back as typed fields (what the service returns per row)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from molprop.errors import InvalidInputError, UnsupportedMoleculeError
from molprop.inference import (
    STATUS_ERROR,
    STATUS_INVALID,
    STATUS_OK,
    STATUS_UNSUPPORTED,
    STATUSES,
    Predictor,
    RowPrediction,
    failure_status,
)


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    return Predictor.from_pretrained("solubility")


def test_failure_status_invalid_input_versus_error():
    assert STATUSES == (STATUS_OK, STATUS_INVALID, STATUS_UNSUPPORTED, STATUS_ERROR)
    assert failure_status(InvalidInputError("bad SMILES")) == STATUS_INVALID
    unsupported = UnsupportedMoleculeError("contains Se", smiles="CC[Se]CC")
    assert failure_status(unsupported) == STATUS_UNSUPPORTED
    row = RowPrediction.failed(unsupported)
    assert row.status == STATUS_UNSUPPORTED and row.standardized_smiles == "CC[Se]CC"
    assert failure_status(RuntimeError("featuriser crashed")) == STATUS_ERROR
    row = RowPrediction.failed(InvalidInputError("too many heavy atoms"))
    assert row == RowPrediction(status=STATUS_INVALID, error="too many heavy atoms")
    assert row.value is None and not row.ok


def test_predictor_rows_read_back_as_typed_fields(solubility):
    smiles = ["CCO", "not a smiles", "", "c1ccccc1O"]
    frame = solubility.predict(smiles)
    target = solubility.target_names[0]
    rows = [RowPrediction.from_frame_row(r, target) for r in frame.to_dict("records")]
    assert [r.status for r in rows] == frame["status"].tolist()
    assert [r.status for r in rows] == [STATUS_OK, STATUS_INVALID, STATUS_INVALID, STATUS_OK]
    for r, (_, f) in zip(rows, frame.iterrows(), strict=True):
        if r.ok:
            assert r.value == f[target] and r.error is None
            assert r.std == f[f"{target}_std"] and r.in_domain is bool(f["in_domain"])
        else:
            assert r.value is None and r.std is None and r.in_domain is None
            assert r.error == f["error"] and r.error


def test_optional_columns_and_non_finite_spread():
    row = {"y": 1.5, "status": "ok", "error": ""}
    assert RowPrediction.from_frame_row(row, "y") == RowPrediction(STATUS_OK, 1.5)
    row = {**row, "y_std": np.nan, "in_domain": np.False_}
    got = RowPrediction.from_frame_row(row, "y")
    assert got.std is None and got.in_domain is False
    failed = {"y": math.nan, "status": STATUS_ERROR, "error": "model failure: boom"}
    assert RowPrediction.from_frame_row(failed, "y") == RowPrediction(
        STATUS_ERROR, error="model failure: boom"
    )
