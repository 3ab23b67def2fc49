"""End to end on a small real subset of the G4MP2 ionisation potentials: split-fidelity ->
pretrain -> finetune (label-augment, inductive) -> Predictor, then an in-house assay fine-tune
with new column names, and a one-seed transfer benchmark."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from molprop.artifact.store import member_path
from molprop.cli.main import main
from molprop.inference.predictor import Predictor

TINY = ["--hidden-dim", "16", "--heads", "2", "--layers", "MSP", "--num-seeds", "4"]
FAST = ["--lr", "1e-3", "--no-progress"]


@pytest.fixture(scope="module")
def pipeline(g4mp2_csv, tmp_path_factory):
    root = tmp_path_factory.mktemp("pipe")
    assert (
        main(
            [
                "split-fidelity",
                "--data",
                str(g4mp2_csv),
                "--low-column",
                "ip_b3lyp",
                "--high-column",
                "ip_g4mp2",
                "--high-sizes",
                "60",
                "20",
                "30",
                "--mode",
                "inductive",
                "--seed",
                "0",
                "--out",
                str(root / "split"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "pretrain",
                "--data",
                str(root / "split" / "pretrain.csv"),
                "--target-columns",
                "ip_b3lyp",
                "--out",
                str(root / "pre"),
                "--epochs",
                "2",
                "--holdout",
                "0.1",
                *TINY,
                *FAST,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "finetune",
                "--from",
                str(root / "pre"),
                "--data",
                str(root / "split" / "train.csv"),
                "--val",
                str(root / "split" / "val.csv"),
                "--test",
                str(root / "split" / "test.csv"),
                "--target-columns",
                "ip_g4mp2",
                "--strategy",
                "label-augment",
                "--mode",
                "inductive",
                "--out",
                str(root / "ft"),
                "--epochs",
                "2",
                *FAST,
            ]
        )
        == 0
    )
    return root


def test_split_pretrain_finetune_predict(pipeline):
    report = json.loads((pipeline / "split" / "split_report.json").read_text())
    assert report["check"]["leak_check"] == "passed" and report["molecules"]["pretrain"] == 150
    config = json.loads((pipeline / "ft" / "config.json").read_text())
    assert config["extra"]["strategy"] == "label-augment" and config["model"]["n_extra"] == 1
    assert (pipeline / "ft" / "pretrained" / "config.json").exists()
    test = pd.read_csv(pipeline / "split" / "test.csv")
    preds = Predictor.from_pretrained(pipeline / "ft").predict(test["smiles"].tolist())
    assert (preds["status"] == "ok").all()
    rmse = float(np.sqrt(np.mean((preds["ip_g4mp2"] - test["ip_g4mp2"]) ** 2)))
    metrics = json.loads((pipeline / "ft" / "metrics.json").read_text())
    assert rmse == pytest.approx(metrics["test"]["ensemble"]["rmse"], rel=1e-5)
    scaler_mean = config["task"]["scaler_mean"][0]
    assert scaler_mean == pytest.approx(
        pd.read_csv(pipeline / "split" / "train.csv")["ip_g4mp2"].mean()
    )


def test_assay_finetune_with_new_column_names(pipeline, esol_frame, tmp_path):
    assay = esol_frame.iloc[:80].rename(columns={"smiles": "compound", "logp": "solubility_assay"})
    assay.to_csv(tmp_path / "assay.csv", index=False)
    out = tmp_path / "assay_model"
    assert (
        main(
            [
                "finetune",
                "--from",
                str(pipeline / "pre"),
                "--data",
                str(tmp_path / "assay.csv"),
                "--smiles-column",
                "compound",
                "--target-columns",
                "solubility_assay",
                "--out",
                str(out),
                "--epochs",
                "2",
                *FAST,
            ]
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text())
    assert config["task"]["target_names"] == ["solubility_assay"]
    assert config["extra"]["fresh_head"] is True and config["extra"]["strategy"] == "full"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["training"]["sizes"]["val"] > 0 and metrics["training"]["sizes"]["test"] > 0
    preds = Predictor.from_pretrained(out).predict(["CCO", "not a smiles"])
    assert list(preds["status"]) == ["ok", "invalid_input"] and np.isfinite(
        preds["solubility_assay"][0]
    )
    pre = load_file(str(member_path(pipeline / "pre", 0)))
    new = load_file(str(member_path(out, 0)))
    assert not all(torch.equal(pre[k], new[k]) for k in pre if k.startswith("head."))


def test_transfer_benchmark_writes_table_and_chart(g4mp2_csv, tmp_path):
    out = tmp_path / "bench"
    assert (
        main(
            [
                "transfer-benchmark",
                "--data",
                str(g4mp2_csv),
                "--low-column",
                "ip_b3lyp",
                "--high-column",
                "ip_g4mp2",
                "--high-sizes",
                "60",
                "20",
                "30",
                "--seeds",
                "0",
                "--strategies",
                "label-augment",
                "--modes",
                "transductive",
                "--units",
                "eV",
                "--pretrain-epochs",
                "1",
                "--finetune-epochs",
                "1",
                "--out",
                str(out),
                *TINY,
            ]
        )
        == 0
    )
    results = pd.read_csv(out / "results.csv")
    assert set(results["method"]) == {"high-only", "linear-correction", "label-augment"}
    assert len(results) == 3 and (results["mode"] != "inductive").all()
    lin = results.loc[results["method"] == "linear-correction", "rmse"].item()
    assert lin < 0.3  # the honest bar: B3LYP IPs corrected linearly are already close to G4MP2
    assert "± " in (out / "results.md").read_text()
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"


def _bench(csv, out, *extra: str) -> pd.DataFrame:
    args = ["transfer-benchmark", "--data", str(csv), "--low-column", "ip_b3lyp"]
    args += ["--high-column", "ip_g4mp2", "--high-sizes", "60", "20", "30", "--seeds", "0"]
    args += ["--strategies", "delta", "--modes", "inductive", "--cross-fit", "2"]
    args += ["--finetune-epochs", "1", "--out", str(out), *TINY, *extra]
    assert main(args) == 0
    return pd.read_csv(out / "results.csv")


def test_benchmark_reuses_pretraining_and_fold_models_only_for_the_same_recipe(g4mp2_csv, tmp_path):
    out = tmp_path / "bench"
    seed_dir = out / "seed_0" / "inductive"
    models = [seed_dir / "pretrained"] + [seed_dir / "crossfit" / f"fold_{k}" for k in (0, 1)]

    def weights() -> list[bytes]:
        return [member_path(m, 0).read_bytes() for m in models]

    first = _bench(g4mp2_csv, out, "--pretrain-epochs", "1")
    # validation RMSE per learned row (to choose recipes without the test set), none for bars
    learned = first["method"].isin(["high-only", "delta"])
    assert np.isfinite(first.loc[learned, "val_rmse"]).all()
    assert first.loc[~learned, "val_rmse"].isna().all()
    before = weights()
    again = _bench(g4mp2_csv, out, "--pretrain-epochs", "1", "--reuse-pretrained")
    assert weights() == before  # same recipe: neither the model nor its fold models retrain
    bars = again["method"].str.startswith("linear-map")
    assert np.allclose(again.loc[bars, "rmse"], first.loc[bars, "rmse"])
    # a different pretraining recipe retrains the model AND its fold models (which held out
    # the same molecules: reusing them would mix two recipes)
    _bench(g4mp2_csv, out, "--pretrain-epochs", "2", "--reuse-pretrained")
    after = weights()
    assert all(a != b for a, b in zip(after, before, strict=True))
    for m in models:
        assert json.loads((m / "config.json").read_text())["train"]["epochs"] == 2
