"""``molprop finetune`` without ``--from`` starts from the model named ``foundation``
($MOLPROP_MODEL_DIR or the shipped models) and says clearly when there is none."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from molprop.artifact import resolve
from molprop.artifact.resolve import FOUNDATION_MODEL, resolve_base_model, resolve_model
from molprop.artifact.store import load_config, member_path
from molprop.cli.main import main
from molprop.errors import ArtifactError


@pytest.fixture
def lipo60(tmp_path, data_dir) -> str:
    path = tmp_path / "lipo60.csv"
    pd.read_csv(data_dir / "moleculenet" / "lipo_chemprop.csv.gz").head(60).to_csv(
        path, index=False
    )
    return str(path)


@pytest.fixture
def no_foundation(tmp_path, monkeypatch):
    """Model directories without a foundation model (an empty $MOLPROP_MODEL_DIR; the shipped
    models replaced by a copy of one shipped model, whatever ships)."""
    shipped = tmp_path / "shipped"
    shutil.copytree(resolve_model("solubility"), shipped / "solubility")
    monkeypatch.setattr(resolve, "shipped_models_dir", lambda: shipped)
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(tmp_path / "empty"))
    return shipped


def finetune(lipo60: str, out, *extra: str) -> int:
    args = ["finetune", "--data", lipo60, "--target-columns", "lipo", "--epochs", "2"]
    return main([*args, "--no-progress", "--out", str(out), *extra])


def test_without_from_and_without_foundation_is_a_clear_error(
    no_foundation, lipo60, tmp_path, capsys
) -> None:
    with pytest.raises(ArtifactError, match="no foundation model"):
        resolve_base_model(None)
    assert finetune(lipo60, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "no foundation model" in err and "--from" in err and "'foundation'" in err
    assert not (tmp_path / "out").exists()


def test_without_from_starts_from_the_foundation_model(
    no_foundation, lipo60, tmp_path, monkeypatch
) -> None:
    models = tmp_path / "models"
    shutil.copytree(no_foundation / "solubility", models / FOUNDATION_MODEL)
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(models))
    assert resolve_base_model(None) == models / FOUNDATION_MODEL
    assert resolve_base_model("solubility") == no_foundation / "solubility"
    out = tmp_path / "out"
    assert finetune(lipo60, out, "--lr", "0") == 0
    config = load_config(out)
    assert config.provenance.finetuned_from == str(models / FOUNDATION_MODEL)
    assert config.provenance.fresh_head  # a new target
    got, src = (
        load_file(str(member_path(out, 0))),
        load_file(str(member_path(models / FOUNDATION_MODEL, 0))),
    )
    for key in (k for k in got if k.startswith("encoder.")):
        torch.testing.assert_close(got[key], src[key], atol=1e-6, rtol=0)
