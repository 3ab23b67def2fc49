"""Inference must not import the training stack: ``import lightning`` costs ~5 s of CPU per
process (measured in benchmarks/RESULTS.md), paid by every ``molprop predict`` and API start."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.models.config import ModelConfig, TaskConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import predict_targets


def test_importing_inference_does_not_import_lightning():
    code = "import sys, molprop.inference, molprop.cli.predict; print('lightning' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_predict_targets_scales_back_and_multiplies_per_atom_totals():
    g = [Graph2DFeaturizer().from_smiles(s) for s in ("CCO", "c1ccccc1")]
    model = MolPropModel.from_config(
        ModelConfig(
            node_dim=g[0].x.shape[1],
            edge_dim=g[0].edge_attr.shape[1],
            n_tasks=1,
            hidden_dim=16,
            heads=2,
            num_seeds=4,
        )
    )
    plain = predict_targets([model], g, TaskConfig(("y",), scaler_mean=(1.0,), scaler_std=(2.0,)))
    per_atom = predict_targets(
        [model], g, TaskConfig(("y",), scaler_mean=(1.0,), scaler_std=(2.0,), per_atom=True)
    )
    assert plain.shape == (1, 2, 1)
    np.testing.assert_allclose(per_atom[0, :, 0], plain[0, :, 0] * np.array([3.0, 6.0]), rtol=1e-5)
