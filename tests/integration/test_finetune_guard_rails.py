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


@pytest.mark.parametrize(
    ("column", "chosen_by"),
    [("log_cl_rlm", "best |r| on the training part"), ("clearance_microsome_rat", "same name")],
)
def test_a_multitask_start_is_its_matching_target_in_the_baselines(
    tmp_path: Path, data_dir, column: str, chosen_by: str, monkeypatch
) -> None:
    """Fine-tuning one endpoint of the shipped 14-target ``admet_regression`` on a rat
    microsomal clearance assay: "the starting model as it is" is its rat microsomal clearance
    prediction (the same name, or the best-correlated target on the training part when the
    assay's column is named otherwise), not its first target (solubility), and its RMSE on
    validation is that prediction's."""
    import numpy as np

    repo = Path(__file__).resolve().parents[2]
    table = pd.read_csv(repo / "data" / "admet" / "clearance_microsome_rat.csv.gz")
    assay = table.sample(150, random_state=0)[["smiles", "log_cl_rlm"]].rename(
        columns={"log_cl_rlm": column}
    )
    path = tmp_path / "rlm.csv"
    assay.to_csv(path, index=False)
    import molprop.transfer.finetune as finetune_module

    parts = {}
    real = finetune_module.held_out_baselines

    def keep_parts(pre_dir, pre, data, task, kept_head):  # the validation molecules
        parts.update(data.parts)
        return real(pre_dir, pre, data, task, kept_head)

    monkeypatch.setattr(finetune_module, "held_out_baselines", keep_parts)
    out = tmp_path / "ft"
    run_finetune(
        FinetuneRequest(
            pretrained=repo / "pretrained" / "admet_regression",
            data=path,
            target_columns=[column],
            out=out,
            train=TrainConfig(epochs=1, batch_size=64),
            progress=False,
        )
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["baseline_start_targets"] == {
        column: {"start_target": "clearance_microsome_rat", "chosen_by": chosen_by}
    }
    val = [str(s) for s in parts["val"].smiles]
    labels = assay.set_index("smiles").loc[val, column].to_numpy()
    shipped = Predictor.from_pretrained(repo / "pretrained" / "admet_regression")
    predicted = shipped.predict(val)["clearance_microsome_rat"].to_numpy()
    rmse = float(np.sqrt(np.mean((predicted - labels) ** 2)))
    assert metrics["baselines"]["val"]["start"]["rmse"] == pytest.approx(rmse, rel=1e-4)
    assert "its clearance_microsome_rat" in (out / "card.md").read_text()
