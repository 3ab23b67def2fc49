"""Every fine-tune reports held-out metrics next to baselines it computes itself (the mean
predictor, the starting model as it is, a linear model on its prediction), says plainly when
it does not beat them (CLI WARNING line, ``metrics["verdict"]``), and writes an artifact with
everything a trained one has: card, applicability domain, calibration, ensemble std."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from molprop.cli.main import main
from molprop.inference.predictor import Predictor
from molprop.models.config import TrainConfig
from molprop.training.train import TrainRequest, run_train
from molprop.transfer.finetune import FinetuneRequest, run_finetune

TINY = {"hidden_dim": 16, "heads": 2, "layers": "MSP", "num_seeds": 4, "head_hidden": 32}


@pytest.fixture(scope="module")
def start_model(tmp_path_factory, data_dir) -> Path:
    """A tiny 1-member solubility model (150 ESOL rows, 2 epochs) to fine-tune from."""
    out = tmp_path_factory.mktemp("start") / "solubility"
    frame = pd.read_csv(data_dir / "moleculenet" / "delaney_chemprop.csv.gz").head(150)
    run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=["logp"],
            out=out,
            model=dict(TINY),
            train=TrainConfig(epochs=2, batch_size=64),
            progress=False,
        )
    )
    return out


@pytest.fixture
def lipo(tmp_path, data_dir) -> Path:
    path = tmp_path / "lipo.csv"
    frame = pd.read_csv(data_dir / "moleculenet" / "lipo_chemprop.csv.gz").iloc[:120]
    frame.to_csv(path, index=False)
    return path


def test_finetune_reports_baselines_and_writes_a_complete_artifact(start_model, lipo, tmp_path):
    out = tmp_path / "ft"
    result = run_finetune(
        FinetuneRequest(
            pretrained=start_model,
            data=lipo,
            target_columns=["lipo"],
            out=out,
            train=TrainConfig(epochs=2, batch_size=32, ensemble_size=2),
            progress=False,
        )
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["verdict"] == result.metrics["verdict"]
    for part in ("val", "test"):
        found = metrics["baselines"][part]
        assert set(found) == {"mean", "start", "start_linear"}
        assert found["mean"]["n"] == metrics[part]["ensemble"]["n"] > 0
    verdict = metrics["verdict"]
    assert (verdict["metric"], verdict["part"]) == ("rmse", "val")
    model_rmse = metrics["val"]["ensemble"]["rmse"]
    for name in ("mean", "start", "start_linear"):
        base = metrics["baselines"]["val"][name]["rmse"]
        assert verdict[f"beats_{name}"] == (model_rmse < base)
    if not verdict["beats_mean"]:
        assert "does NOT beat the mean predictor on validation" in verdict["message"]
    # the artifact: 2 members (std), domain (in_domain), calibration (intervals), card
    card = (out / "card.md").read_text()
    assert verdict["message"] in card and "Baselines (val)" in card
    assert (out / "domain.safetensors").exists() and "calibration" in metrics
    pred = Predictor.from_pretrained(out).predict(["CCO", "c1ccccc1O", "not a smiles"])
    assert {"lipo_std", "in_domain", "lipo_low", "lipo_high"} <= set(pred.columns)
    assert (pred["lipo_std"].iloc[:2] > 0).all()
    assert pred["in_domain"].iloc[:2].isin([True, False]).all()
    assert (pred["lipo_low"].iloc[:2] < pred["lipo_high"].iloc[:2]).all()


def test_cli_warns_when_the_finetuned_model_loses_to_the_mean(start_model, lipo, tmp_path, capsys):
    """Labels that carry no signal (one value): the mean predictor is exact, any trained
    model is worse; the CLI says so on a WARNING line."""
    frame = pd.read_csv(lipo)
    frame["lipo"] = 2.5
    frame.to_csv(lipo, index=False)
    out = tmp_path / "ft"
    argv = ["finetune", "--from", str(start_model), "--data", str(lipo)]
    argv += ["--target-columns", "lipo", "--epochs", "2", "--lr", "0.01", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    verdict = json.loads((out / "metrics.json").read_text())["verdict"]
    assert verdict["beats_mean"] is False, verdict
    assert json.loads((out / "metrics.json").read_text())["baselines"]["val"]["mean"]["rmse"] < 1e-9
    assert f"WARNING: {verdict['message']}" in printed
    assert "does NOT beat the mean predictor on validation (RMSE" in printed
    assert "do not use it" in printed
