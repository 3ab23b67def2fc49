"""The Predictor hands each row's novelty (1 - max similarity to the training set, from the
artifact's domain) to a novelty-scaled calibration: intervals from ``predict`` and
``predict_frame`` equal the calibration's own intervals at those novelties, and differ from
what an unknown novelty (the calibration median) gives. Shipped FreeSolv model, its stored
calibration with beta set to 3 (whatever the shipped beta is)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.calibration import Calibration, ConformalTarget
from molprop.inference import Predictor

SMILES = ["CCO", "Oc1ccccc1", "CC(C)(C)c1ccc(O)cc1", "ClC(Cl)(Cl)Cl", "OCC(O)CO", "c1ccc2ccccc2c1"]


@pytest.fixture(scope="module")
def predictor() -> Predictor:
    p = Predictor.from_pretrained("hydration_free_energy")
    assert p.calibration is not None and p.domain is not None
    name = p.target_names[0]
    target = p.calibration.targets[name]
    assert isinstance(target, ConformalTarget) and target.novelty is not None
    scaled = replace(target, difficulty="std+novelty", beta=3.0, _cache={})
    p.calibration = Calibration(p.calibration.task_type, {name: scaled}, p.calibration.fitted_on)
    return p


def test_predict_passes_each_rows_novelty(predictor: Predictor):
    name = predictor.target_names[0]
    target = predictor.calibration.targets[name]
    out = predictor.predict(SMILES, interval=0.9)
    novelty = 1.0 - predictor.domain.similarity(SMILES)
    mean, std = out[name].to_numpy(), out[f"{name}_std"].to_numpy()
    dom = out["in_domain"].to_numpy(dtype=bool)
    low, high, _ = target.intervals(mean, std, dom, 0.9, novelty)
    np.testing.assert_allclose(out[f"{name}_low"], low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out[f"{name}_high"], high, rtol=0, atol=1e-12)
    unknown_low, _, _ = target.intervals(mean, std, dom, 0.9, None)
    assert np.max(np.abs(unknown_low - low)) > 0.05  # the novelty did change the intervals
    frame = predictor.predict_frame(pd.DataFrame({"smiles": SMILES}), "smiles", interval=0.9)
    np.testing.assert_allclose(frame[f"{name}_low"], low, rtol=0, atol=1e-12)
