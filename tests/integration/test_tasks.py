"""Classification and multitask-with-missing-labels training on real data (tiny models)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from molprop.inference import Predictor
from molprop.models.config import TrainConfig
from molprop.training.train import TrainRequest, run_train

TINY = {"hidden_dim": 16, "heads": 2, "num_seeds": 4, "layers": "MSP", "head_hidden": 32}


def test_binary_classification_on_bbbp(tmp_path, data_dir):
    frame = (
        pd.read_csv(data_dir / "moleculenet/bbbp.csv.gz").sample(300, random_state=0).astype(str)
    )
    frame.loc[frame.index[:3], "p_np"] = "maybe"  # non-numeric labels: reported, not dropped
    out = tmp_path / "bbbp"
    result = run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=["p_np"],
            out=out,
            task_type="classification",
            split_type="random",
            model=TINY,
            train=TrainConfig(epochs=3, batch_size=32, lr=1e-3),
            progress=False,
        )
    )
    test = result.ensemble("test")
    assert {"roc_auc", "mcc", "accuracy"} <= set(test)
    assert result.metrics["training"]["n_rows_invalid"] == 3
    invalid = pd.read_csv(out / "invalid_rows.csv")
    assert len(invalid) == 3 and invalid.reason.str.contains("not a number").all()
    pred = Predictor.from_pretrained(out).predict(frame.smiles.tolist()[:20])
    p = pred["p_np"].to_numpy()
    assert ((p >= 0) & (p <= 1)).all()
    assert json.loads((out / "config.json").read_text())["task"]["task_type"] == "classification"


def test_multitask_with_missing_labels(tmp_path, data_dir):
    frame = pd.read_csv(data_dir / "qm9/micro_qm9.csv.gz").head(300)[["smiles", "gap", "mu"]]
    frame = frame.astype(str)
    rng = np.random.default_rng(0)
    frame.loc[rng.random(len(frame)) < 0.3, "gap"] = ""
    frame.loc[rng.random(len(frame)) < 0.3, "mu"] = ""
    out = tmp_path / "qm9"
    result = run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=["gap", "mu"],
            out=out,
            split_type="random",
            model=TINY,
            train=TrainConfig(epochs=2, batch_size=32, lr=1e-3),
            progress=False,
        )
    )
    test = result.ensemble("test")
    assert {"rmse/gap", "rmse/mu"} <= set(test)
    both_blank = ((frame.gap == "") & (frame.mu == "")).sum()
    assert result.metrics["training"]["n_rows_invalid"] == both_blank
    assert result.metrics["training"]["n_rows_valid"] == 300 - both_blank
    assert result.written and result.directory == out
    assert (out / "metrics.json").read_text() == json.dumps(result.metrics, indent=2)
    assert result.summaries == result.metrics["training"]["members"]
    cfg = json.loads((out / "config.json").read_text())
    y = pd.to_numeric(frame.gap, errors="coerce")
    split = pd.read_csv(out / "split.csv")
    train_gap = y.iloc[split.row[split.split == "train"]].dropna()
    assert abs(cfg["task"]["scaler_mean"][0] - train_gap.mean()) < 1e-9  # fitted on train only


def test_bf16_autocast_trains_and_predicts_finite(tmp_path, esol_frame):
    frame = esol_frame.head(120).astype(str)
    result = run_train(
        TrainRequest(
            data=frame,
            smiles_column="smiles",
            target_columns=["logp"],
            out=tmp_path / "bf16",
            split_type="random",
            model=TINY,
            train=TrainConfig(epochs=2, batch_size=32, lr=1e-3, bf16=True),
            progress=False,
        )
    )
    assert np.isfinite(result.ensemble("test")["rmse"])
    assert json.loads((tmp_path / "bf16/config.json").read_text())["train"]["bf16"] is True
