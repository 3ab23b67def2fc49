"""Honest serving of transfer models, end to end on a real subset of the G4MP2 ionisation
potentials: a Δ-learning artifact trained on measured B3LYP IPs declares it, `molprop predict
--low-column` reproduces its published test RMSE, prediction refuses without the labels and
flags bad ones per row (CLI, Predictor, a real uvicorn service); cross-fitted inductive
label-augment trains on out-of-fold inputs; inductive delta-measured (training targets from the
training molecules' measured B3LYP IPs) serves without measured labels and `molprop predict`
reproduces its published test RMSE; an artifact in the earlier layout predicts as before."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import httpx
import numpy as np
import pandas as pd
import pytest
import torch

from molprop.artifact import Artifact, CardTexts
from molprop.artifact.store import load_config, save_artifact
from molprop.cli.main import main
from molprop.data.batch import collate_graphs
from molprop.inference.augment import MissingLowLabels, PretrainedSource, standardise
from molprop.inference.predictor import Predictor
from molprop.models.model import MolPropModel
from molprop.transfer.crossfit import molecule_keys
from tests.api.conftest import uvicorn_server

TINY = ["--hidden-dim", "16", "--heads", "2", "--layers", "MSP", "--num-seeds", "4"]
FAST = ["--lr", "1e-3", "--no-progress"]


def _split_pretrain(csv, root, mode: str):
    split = root / mode / "split"
    args = ["--low-column", "ip_b3lyp", "--high-column", "ip_g4mp2", "--seed", "0"]
    sizes = ["--high-sizes", "60", "20", "30", "--mode", mode, "--out", str(split)]
    assert main(["split-fidelity", "--data", str(csv), *args, *sizes]) == 0
    pre = root / mode / "pre"
    data = ["--data", str(split / "pretrain.csv"), "--target-columns", "ip_b3lyp"]
    assert main(["pretrain", *data, "--out", str(pre), "--epochs", "1", *TINY, *FAST]) == 0
    return split, pre


def _finetune(split, pre, out, strategy: str, mode: str, *extra: str) -> None:
    parts = ["--data", str(split / "train.csv"), "--val", str(split / "val.csv")]
    parts += ["--test", str(split / "test.csv"), "--target-columns", "ip_g4mp2"]
    args = ["--strategy", strategy, "--mode", mode, "--out", str(out), "--epochs", "2"]
    assert main(["finetune", "--from", str(pre), *parts, *args, *FAST, *extra]) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory, g4mp2_csv):
    root = tmp_path_factory.mktemp("delta")
    split, pre = _split_pretrain(g4mp2_csv, root, "transductive")
    _finetune(split, pre, root / "models" / "ip_delta", "delta", "transductive")
    isplit, ipre = _split_pretrain(g4mp2_csv, root, "inductive")
    cross = ["--cross-fit", "2", "--pretrain-data", str(isplit / "pretrain.csv")]
    _finetune(isplit, ipre, root / "la_ind", "label-augment", "inductive", *cross)
    _finetune(isplit, ipre, root / "dm_ind", "delta-measured", "inductive", *cross)
    return root


def _cli_predict(model, input_csv, output, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "molprop.cli.main", "predict", "--model", str(model)]
    cmd += ["--input", str(input_csv), "--output", str(output), "--no-progress", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_cli_with_low_column_reproduces_the_published_test_rmse(runs, tmp_path):
    model = runs / "models" / "ip_delta"
    config = json.loads((model / "config.json").read_text())
    assert config["extra"]["augment"]["input"] == "measured"
    assert config["extra"]["augment"]["low_columns"] == ["ip_b3lyp"]
    assert config["model"]["extra_skip"] is True and config["model"]["extra_to_head"] is False
    metrics = json.loads((model / "metrics.json").read_text())
    assert metrics["augmentation_input"] == {
        p: "measured ip_b3lyp" for p in ("train", "val", "test")
    }
    test = pd.read_csv(runs / "transductive" / "split" / "test.csv")
    test.rename(columns={"ip_g4mp2": "truth"}).to_csv(tmp_path / "test.csv", index=False)
    proc = _cli_predict(
        model, tmp_path / "test.csv", tmp_path / "out.csv", "--low-column", "ip_b3lyp"
    )
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert (out["status"] == "ok").all() and len(out) == len(test) == 30
    rmse = float(np.sqrt(np.mean((out["ip_g4mp2"] - out["truth"]) ** 2)))
    assert rmse == pytest.approx(metrics["test"]["ensemble"]["rmse"], rel=1e-5)
    # the fit of the measured label is added back: far better than the pretrained model
    assert rmse < 0.3 < float(np.std(test["ip_g4mp2"]))


def test_prediction_without_low_labels_refuses_and_bad_ones_are_per_row(runs, tmp_path):
    model = runs / "models" / "ip_delta"
    test = pd.read_csv(runs / "transductive" / "split" / "test.csv").head(5)
    test.to_csv(tmp_path / "in.csv", index=False)
    proc = _cli_predict(model, tmp_path / "in.csv", tmp_path / "no_low.csv")
    assert proc.returncode != 0 and "trained on measured low-fidelity labels" in proc.stderr
    assert not (tmp_path / "no_low.csv").exists()
    predictor = Predictor.from_pretrained(model)
    assert predictor.low_columns == ["ip_b3lyp"]
    with pytest.raises(MissingLowLabels, match="ip_b3lyp"):
        predictor.predict(test["smiles"].tolist())
    low = test["ip_b3lyp"].tolist()
    good = predictor.predict(test["smiles"].tolist(), low=low)
    bad = [low[0], "abc", None, float("nan"), low[4]]
    out = predictor.predict(test["smiles"].tolist(), low=bad)
    assert list(out["status"]) == ["ok", "invalid_input", "invalid_input", "invalid_input", "ok"]
    assert "row 1" in out["error"][1] and "not a number" in out["error"][1]
    assert "row 2" in out["error"][2] and "missing" in out["error"][2]
    assert np.isnan(out["ip_g4mp2"][1:4]).all()
    np.testing.assert_allclose(out["ip_g4mp2"][[0, 4]], good["ip_g4mp2"][[0, 4]], rtol=1e-6)
    shifted = predictor.predict(test["smiles"].tolist(), low=[v + 1.0 for v in low])
    assert not np.allclose(shifted["ip_g4mp2"], good["ip_g4mp2"])  # the label is used


def test_service_takes_a_low_field_per_row(runs, tmp_path):
    model = runs / "models" / "ip_delta"
    Artifact(model).write_card(
        CardTexts(title="Δ IP (test)", data_source="G4MP2", licence="MIT", intended_use="tests")
    )
    card = (model / "card.md").read_text()
    assert "**measured** low-fidelity labels (`ip_b3lyp`)" in card and "Δ-learning" in card
    test = pd.read_csv(runs / "transductive" / "split" / "test.csv").head(3)
    smiles, low = test["smiles"].tolist(), test["ip_b3lyp"].tolist()
    expected = Predictor.from_pretrained(model).predict(smiles, low=low, interval=None)
    with uvicorn_server(runs / "models", tmp_path / "uvicorn.log") as base:
        body = {"model": "ip_delta", "smiles": smiles, "interval": None}
        refused = httpx.post(f"{base}/v1/predict", json=body, timeout=60)
        assert refused.status_code == 422 and "'low'" in refused.json()["detail"]
        ok = httpx.post(f"{base}/v1/predict", json={**body, "low": low}, timeout=60)
        assert ok.status_code == 200
        values = [r["value"] for r in ok.json()["results"]]
        np.testing.assert_allclose(values, expected["ip_g4mp2"], rtol=1e-5)
        mixed = httpx.post(
            f"{base}/v1/predict", json={**body, "low": [low[0], "n/a", "x1"]}, timeout=60
        )
        assert mixed.status_code == 200
        rows = mixed.json()["results"]
        assert [r["status"] for r in rows] == ["ok", "invalid_input", "invalid_input"]
        assert "row 1" in rows[1]["error"] and "row 2" in rows[2]["error"]
        assert rows[0]["value"] == pytest.approx(values[0], rel=1e-6)
        # jobs take no low labels: refused at submission, JSON and CSV upload alike
        job = httpx.post(f"{base}/v1/jobs", json={"model": "ip_delta", "smiles": smiles})
        assert job.status_code == 422 and "'low'" in job.json()["detail"], job.text
        upload = httpx.post(
            f"{base}/v1/jobs",
            files={"file": ("in.csv", "smiles\n" + "\n".join(smiles) + "\n", "text/csv")},
            data={"model": "ip_delta"},
        )
        assert upload.status_code == 422 and "low-fidelity" in upload.json()["detail"], upload.text
        assert httpx.get(f"{base}/v1/jobs").json()["jobs"] == []


def test_cross_fitted_label_augment_trains_on_out_of_fold_inputs(runs):
    model = runs / "la_ind"
    metrics = json.loads((model / "metrics.json").read_text())
    assert metrics["augmentation_input"]["train"] == "out-of-fold predictions of 2 fold models"
    assert metrics["augmentation_input"]["test"] == "pretrained model's prediction"
    train = pd.read_csv(runs / "inductive" / "split" / "train.csv")
    keys = set(molecule_keys(train["smiles"].tolist()))
    held_all: list[str] = []
    for fold_dir in metrics["crossfit"]["fold_models"]:
        held = set(json.loads((runs / fold_dir / "heldout.json").read_text()))
        seen = set(molecule_keys(pd.read_csv(runs / fold_dir / "split.csv")["smiles"].tolist()))
        assert held and not held & seen  # a fold model never saw its fold's molecules
        held_all += sorted(held)
    assert sorted(held_all) == sorted(keys)  # every training molecule is held out exactly once
    config = load_config(model)
    assert config.augment.input == "predicted" and config.model.extra_skip
    test = pd.read_csv(runs / "inductive" / "split" / "test.csv")
    preds = Predictor.from_pretrained(model).predict(test["smiles"].tolist())
    rmse = float(np.sqrt(np.mean((preds["ip_g4mp2"] - test["ip_g4mp2"]) ** 2)))
    assert rmse == pytest.approx(metrics["test"]["ensemble"]["rmse"], rel=1e-5)


def test_artifact_in_the_earlier_layout_predicts_as_before(runs, tmp_path):
    """A label-augmented artifact as written before the skip existed (head input = embedding
    ⊕ x, no ``extra_skip`` / ``input`` keys) loads, needs no low labels and predicts
    head(emb ⊕ x)."""
    src = runs / "la_ind"
    new = load_config(src)
    from dataclasses import replace

    cfg = replace(new, model=replace(new.model, extra_skip=False))
    aug = replace(cfg.augment, input="predicted", low_columns=())
    cfg = replace(cfg, augment=aug, n_members=1)
    torch.manual_seed(3)
    member = MolPropModel.from_config(cfg.model).eval()
    legacy = tmp_path / "legacy"
    save_artifact(legacy, cfg, [member])
    shutil.copytree(src / "pretrained", legacy / "pretrained")
    raw = json.loads((legacy / "config.json").read_text())
    assert "extra_skip" not in raw["model"] and "input" not in raw["extra"]["augment"]
    smiles = pd.read_csv(runs / "inductive" / "split" / "test.csv")["smiles"].tolist()[:8]
    predictor = Predictor.from_pretrained(legacy)
    assert predictor.low_columns == [] and predictor.members[0].skip is None
    out = predictor.predict(smiles, interval=None)
    graphs = [predictor.featurizer.from_smiles(s) for s in smiles]
    x = standardise(aug, PretrainedSource(legacy / "pretrained").low_predictions(graphs))
    with torch.no_grad():
        emb = member.embed(collate_graphs(graphs, extra=x))
        scaled = member.head(torch.cat([emb, torch.as_tensor(x, dtype=emb.dtype)], -1)).numpy()
    expected = scaled[:, 0] * cfg.task.scaler_std[0] + cfg.task.scaler_mean[0]
    np.testing.assert_allclose(out["ip_g4mp2"], expected, rtol=1e-5)


def test_delta_measured_serves_without_measured_labels(runs, tmp_path, capsys):
    """Trained on the training molecules' measured low labels (targets only), served inductively:
    no low label at prediction, and `molprop predict` reproduces the published test RMSE."""
    model = runs / "dm_ind"
    config = load_config(model)
    assert config.provenance.strategy == "delta-measured" and config.provenance.mode == "inductive"
    assert config.augment.input == "predicted" and config.augment.low_columns == ()
    assert config.model.extra_skip and not config.model.extra_to_head
    metrics = json.loads((model / "metrics.json").read_text())
    assert metrics["augmentation_input"]["train"] == "out-of-fold predictions of 2 fold models"
    assert metrics["augmentation_input"]["test"] == "pretrained model's prediction"
    note = metrics["training_targets"]["note"]
    assert "MEASURED" in note and "ip_b3lyp" in note and "no measured label" in note
    # the measured-label residual is far smaller than the (tiny) pretrained model's error
    a_x = metrics["training_targets"]["x_weight"][0][0]
    assert metrics["training_targets"]["train_residual_rmse"][0] < 0.3 and 0 < a_x
    Artifact(model).write_card(
        CardTexts(title="Δ IP (test)", data_source="G4MP2", licence="MIT", intended_use="t")
    )
    assert "**measured** low-fidelity labels of the training" in (model / "card.md").read_text()
    test = pd.read_csv(runs / "inductive" / "split" / "test.csv")
    assert "ip_b3lyp" not in test.columns  # nothing measured to give
    test[["smiles"]].assign(truth=test["ip_g4mp2"]).to_csv(tmp_path / "test.csv", index=False)
    proc = _cli_predict(model, tmp_path / "test.csv", tmp_path / "out.csv")
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert (out["status"] == "ok").all() and len(out) == len(test) == 30
    rmse = float(np.sqrt(np.mean((out["ip_g4mp2"] - out["truth"]) ** 2)))
    assert rmse == pytest.approx(metrics["test"]["ensemble"]["rmse"], rel=1e-5)
    assert Predictor.from_pretrained(model).low_columns == []
    # transductive: refused before any training (x would be the measured label: plain delta)
    split = runs / "transductive" / "split"
    args = ["finetune", "--from", str(runs / "transductive" / "pre"), "--data"]
    args += [str(split / "train.csv"), "--target-columns", "ip_g4mp2", "--out", str(tmp_path / "x")]
    assert main([*args, "--strategy", "delta-measured", "--mode", "transductive"]) == 2
    assert "inductive only" in capsys.readouterr().err and not (tmp_path / "x").exists()
