"""ONNX export (``molprop export``) and the ``onnxruntime`` backend: the same DataFrame as torch
(values, stds, intervals, in_domain, statuses) on 1,000 real HIV molecules, for the shipped ESA
model and an NSA model; stale exports and unexportable models fail with clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

from molprop.artifact.onnx import export_onnx
from molprop.artifact.resolve import shipped_models_dir
from molprop.artifact.store import member_path
from molprop.cli.main import main
from molprop.data import collate_graphs
from molprop.errors import ArtifactError, ExportError
from molprop.featurize import Graph2DFeaturizer
from molprop.inference.predictor import Predictor
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.models.onnx import export_member
from tests.unit.artifact.test_artifact import _artifact

TOL = 1e-4


@pytest.fixture(scope="module")
def hiv_smiles(data_dir) -> list[str]:
    smiles = pd.read_csv(data_dir / "moleculenet" / "hiv.csv.gz")["smiles"].head(1000).tolist()
    return [*smiles, "not a smiles", "C1CC"]  # two invalid rows keep their statuses


def assert_same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)
    for col in a.columns:
        if pd.api.types.is_float_dtype(a[col]):
            x, y = a[col].to_numpy(), b[col].to_numpy()
            np.testing.assert_array_equal(np.isnan(x), np.isnan(y), err_msg=col)
            ok = ~np.isnan(x)
            assert np.abs(x[ok] - y[ok]).max() <= TOL, col
        else:
            assert a[col].tolist() == b[col].tolist(), col


def test_shipped_esa_model_onnx_equals_torch(tmp_path, hiv_smiles):
    model_dir = tmp_path / "solubility"
    shutil.copytree(shipped_models_dir() / "solubility", model_dir)
    assert main(["export", "--model", str(model_dir), "--format", "onnx"]) == 0
    assert sorted(p.name for p in (model_dir / "onnx").iterdir()) == [
        "member_0.onnx",
        "member_1.onnx",
        "member_2.onnx",
        "onnx.json",
    ]
    torch_model = Predictor.from_pretrained(model_dir)
    onnx_model = Predictor.from_pretrained(model_dir, backend="onnxruntime")
    assert torch_model.config.model.token_kind == "esa"
    a, b = torch_model.predict(hiv_smiles), onnx_model.predict(hiv_smiles)
    assert {"logS_std", "logS_low", "logS_high", "in_domain"} <= set(a.columns)
    # HIV screening molecules include metal complexes and inorganics: unsupported, no prediction
    assert (a["status"] == "ok").sum() >= 900
    assert a["status"].isin(["ok", "unsupported"]).sum() >= 990
    assert a["status"].iloc[-2:].tolist() == ["invalid_input", "invalid_input"]
    assert_same_frame(a, b)
    # not a trivially equal pair: the members differ from each other by far more than TOL
    assert a["logS_std"].median() > 100 * TOL


def nsa_artifact(directory: Path, n_members: int = 2) -> Path:
    """A saved NSA artifact of seeded random members (the artifact tests' helper)."""
    _artifact(directory, n_members, token_kind="nsa", hidden_dim=32, heads=4, layers="MSMP S")
    return directory


def test_nsa_model_exported_to_a_file_name_equals_torch(tmp_path, hiv_smiles):
    model_dir = nsa_artifact(tmp_path / "nsa")
    out = tmp_path / "elsewhere" / "nsa.onnx"
    export = export_onnx(model_dir, out)
    assert [p.name for p in export.members] == ["nsa.0.onnx", "nsa.1.onnx"]
    assert export.metadata == out.with_suffix(".json")
    a = Predictor.from_pretrained(model_dir).predict(hiv_smiles)
    b = Predictor.from_pretrained(model_dir, backend="onnxruntime", onnx=out).predict(hiv_smiles)
    assert {"y", "y_std"} <= set(a.columns)
    assert_same_frame(a, b)
    # without the export at DIR/onnx the default location is refused, clearly
    with pytest.raises(ArtifactError, match="molprop export"):
        Predictor.from_pretrained(model_dir, backend="onnxruntime")
    # the CLI: molprop predict --backend onnxruntime --onnx FILE writes the torch backend's rows
    table = tmp_path / "in.csv"
    pd.DataFrame({"smiles": hiv_smiles[:200] + ["not a smiles"]}).to_csv(table, index=False)
    common = ["predict", "--model", str(model_dir), "--input", str(table), "--no-progress"]
    assert main(common + ["--output", str(tmp_path / "torch.csv")]) == 0
    onnx_args = ["--backend", "onnxruntime", "--onnx", str(out)]
    assert main(common + onnx_args + ["--output", str(tmp_path / "ort.csv")]) == 0
    assert_same_frame(pd.read_csv(tmp_path / "torch.csv"), pd.read_csv(tmp_path / "ort.csv"))


def test_export_of_other_weights_is_refused(tmp_path):
    model_dir = nsa_artifact(tmp_path / "nsa", n_members=1)
    export_onnx(model_dir)
    path = member_path(model_dir, 0)
    state = MolPropModel.from_config(Predictor.from_pretrained(model_dir).config.model)
    save_file({k: v.contiguous() for k, v in state.state_dict().items()}, str(path))
    with pytest.raises(ArtifactError, match="other weights"):
        Predictor.from_pretrained(model_dir, backend="onnxruntime")


def test_learnable_distance_basis_model_is_refused(tmp_path):
    featurizer = Graph2DFeaturizer()
    cfg = ModelConfig(featurizer.node_dim, featurizer.edge_dim, 1, hidden_dim=16, heads=2)
    cfg = ModelConfig(**{**cfg.to_dict(), "learnable_rbf": 4})
    batch = collate_graphs([featurizer.from_smiles("CCO")])
    with pytest.raises(ExportError, match="learnable_rbf"):
        export_member(MolPropModel.from_config(cfg), batch, tmp_path / "m.onnx")


class BesselHead(torch.nn.Module):
    """A head with an operation ONNX has no symbol for."""

    def __init__(self, head: torch.nn.Module):
        super().__init__()
        self.inner = head
        self.in_dim, self.n_tasks = head.in_dim, head.n_tasks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.bessel_j0(self.inner(x))


def test_unexportable_operation_fails_with_a_clear_error(tmp_path):
    featurizer = Graph2DFeaturizer()
    model = MolPropModel.from_config(
        ModelConfig(featurizer.node_dim, featurizer.edge_dim, 1, hidden_dim=16, heads=2)
    )
    model.head = BesselHead(model.head)
    batch = collate_graphs([featurizer.from_smiles(s) for s in ("CCO", "c1ccccc1")])
    with pytest.raises(ExportError, match="bessel_j0"):
        export_member(model.eval(), batch, tmp_path / "m.onnx")
