"""Structure inputs need a 3D model; the choice is the model's featuriser kind (no lookup of
reader methods on the featuriser)."""

from __future__ import annotations

import pytest

from molprop.errors import ConfigError
from molprop.inference import Predictor


def test_a_2d_model_refuses_structures_by_its_featuriser_kind(tmp_path):
    predictor = Predictor.from_pretrained("solubility")
    assert predictor.config.featurizer.kind == "2d" and not predictor.reads_structures
    with pytest.raises(ConfigError, match="--featurizer 3d"):
        predictor.predict_structure_file(tmp_path / "frames.extxyz")
    with pytest.raises(ConfigError, match="--featurizer 3d"):
        predictor.predict_structures([])
