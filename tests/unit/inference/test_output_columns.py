"""Output columns never replace input columns: ``join_outputs`` (the one place inputs and
predictions are put side by side) and ``Predictor.predict_frame`` on a table that already has
columns named like the model's outputs (a chemist's measured ``logp``, a ``status``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from molprop.inference import Predictor
from molprop.inference.rows import join_outputs, output_name


def test_output_name_prefixes_until_free():
    assert output_name("logp", ["smiles"]) == "logp"
    assert output_name("logp", ["smiles", "logp"]) == "pred_logp"
    assert output_name("logp", ["logp", "pred_logp"]) == "pred_pred_logp"


def test_join_keeps_every_input_column_and_renames_clashing_outputs():
    inputs = pd.DataFrame({"smiles": ["CCO", "C"], "logp": ["-0.77", "1.1"], "status": ["a", "b"]})
    outputs = pd.DataFrame(
        {"logp": [0.5, -2.0], "logp_std": [0.1, 0.2], "status": ["ok", "ok"], "error": ["", ""]}
    )
    out = join_outputs(inputs, outputs)
    assert out.columns.tolist() == [
        "smiles", "logp", "status", "pred_logp", "logp_std", "pred_status", "error",
    ]  # fmt: skip
    assert out["logp"].tolist() == ["-0.77", "1.1"] and out["status"].tolist() == ["a", "b"]
    assert out["pred_logp"].tolist() == [0.5, -2.0]
    assert out["pred_status"].tolist() == ["ok", "ok"]
    # an input that already has pred_logp too: the prefix is repeated
    both = join_outputs(inputs.assign(pred_logp=["x", "y"]), outputs)
    assert both["pred_logp"].tolist() == ["x", "y"]
    assert both["pred_pred_logp"].tolist() == [0.5, -2.0]
    with pytest.raises(ValueError, match="2 input rows but 1 output rows"):
        join_outputs(inputs, outputs.head(1))


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    return Predictor.from_pretrained("solubility")


def test_predict_frame_keeps_a_measured_target_column(solubility):
    """A table with the measured log solubility under the model's own target name ``logS``."""
    smiles = ["CCO", "c1ccccc1O", "not a smiles", "CC(=O)Nc1ccc(O)cc1"]
    measured = ["1.10", "-0.04", "-3.2", "-1.03"]
    inputs = pd.DataFrame({"smiles": smiles, "logS": measured, "error": ["note"] * 4})
    out = solubility.predict_frame(inputs, "smiles")
    assert out.columns[:3].tolist() == ["smiles", "logS", "error"]
    assert out["logS"].tolist() == measured and out["error"].tolist() == ["note"] * 4
    assert "pred_logS" in out and "pred_error" in out and "status" in out
    expected = solubility.predict(smiles)
    np.testing.assert_allclose(out["pred_logS"], expected["logS"], rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(out["logS_low"], expected["logS_low"], rtol=1e-6, equal_nan=True)
    assert out["status"].tolist() == expected["status"].tolist()
    assert out["pred_error"].tolist() == expected["error"].tolist()
    assert out["in_domain"].tolist()[:2] == expected["in_domain"].tolist()[:2]
