"""End to end through the CLI on real ESOL: train (scaffold split) -> predict -> evaluate."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from molprop.cli.main import main
from molprop.inference import Predictor


@pytest.fixture(scope="module")
def trained(tmp_path_factory, esol_path):
    out = tmp_path_factory.mktemp("esol_model")
    code = main(
        [
            "train",
            "--data",
            str(esol_path),
            "--smiles-column",
            "smiles",
            "--target-columns",
            "logp",
            "--split-type",
            "scaffold",
            "--seed",
            "0",
            "--model",
            "esa",
            "--layers",
            "MSMP S",
            "--hidden-dim",
            "32",
            "--heads",
            "4",
            "--num-seeds",
            "8",
            "--epochs",
            "12",
            "--lr",
            "1e-3",
            "--batch-size",
            "32",
            "--ensemble-size",
            "2",
            "--units",
            "log mol/L",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out


def test_training_beats_train_mean_on_scaffold_test(trained, esol_path):
    metrics = json.loads((trained / "metrics.json").read_text())
    split = pd.read_csv(trained / "split.csv")
    assert len(split) == 1128
    y = pd.read_csv(esol_path)["logp"].to_numpy()
    train_mean = y[split.row[split.split == "train"]].mean()
    test_y = y[split.row[split.split == "test"]]
    baseline = float(np.sqrt(np.mean((test_y - train_mean) ** 2)))
    test = metrics["test"]["ensemble"]
    assert test["n"] == len(test_y)
    assert test["rmse"] < 0.8 * baseline, (test["rmse"], baseline)
    assert len(metrics["test"]["members"]) == 2
    # artifact layout
    assert (trained / "config.json").exists()
    assert (trained / "members/0/model.safetensors").exists()
    assert (trained / "members/1/model.safetensors").exists()
    assert set(split.split) == {"train", "val", "test"}
    assert (trained / "logs/member_0/metrics.csv").exists()


def test_trained_model_has_a_card(trained, esol_path):
    """``molprop train`` documents its model as a shipped one: data, test metrics of the
    ensemble (the numbers of metrics.json), calibration and domain."""
    card = (trained / "card.md").read_text()
    metrics = json.loads((trained / "metrics.json").read_text())
    assert card.startswith(f"# {trained.name}: trained on {esol_path.name}")
    assert str(esol_path) in card and "log mol/L" in card
    assert f"{metrics['test']['ensemble']['rmse']:.3f}" in card
    assert "Applicability domain" in card and "Ensemble of 2 ESA members" in card
    assert "conformal" in card.lower()


def test_predict_cli_keeps_order_and_reports_bad_rows(trained, tmp_path):
    rows = [
        "CCO",
        "this is not smiles",
        "",
        "c1ccccc1O",
        "C1CC",
        "[Na+].[Cl-]",
        "CC(C)(C)(C)(C)C",
        "[Na+].[O-]C(=O)c1ccccc1",
        "O=C(O)c1ccccc1",
    ]
    inp = tmp_path / "in.csv"
    pd.DataFrame({"compound": [f"id{i}" for i in range(len(rows))], "smi": rows}).to_csv(
        inp, index=False
    )
    out = tmp_path / "out.csv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "molprop.cli.main",
            "predict",
            "--model",
            str(trained),
            "--input",
            str(inp),
            "--smiles-column",
            "smi",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    res = pd.read_csv(out, keep_default_na=False)
    assert res["compound"].tolist() == [f"id{i}" for i in range(len(rows))]
    assert res["status"].tolist() == [
        "ok",
        "invalid_input",
        "invalid_input",
        "ok",
        "invalid_input",
        "unsupported",
        "invalid_input",
        "ok",
        "ok",
    ]
    assert "inorganic" in res.loc[5, "error"]
    # sodium benzoate is predicted as benzoic acid; the input stays in its own column
    assert res.loc[7, "smi"] == "[Na+].[O-]C(=O)c1ccccc1"
    assert res["standardized_smiles"].tolist()[7:] == ["O=C(O)c1ccccc1", "O=C(O)c1ccccc1"]
    assert float(res.loc[7, "logp"]) == pytest.approx(float(res.loc[8, "logp"]), abs=1e-5)
    assert "RDKit" in res.loc[1, "error"] and "empty" in res.loc[2, "error"]
    assert "valence" in res.loc[6, "error"].lower()
    assert res.loc[0, "error"] == ""
    assert {"logp", "logp_std"} <= set(res.columns)
    ok = res[res.status == "ok"]
    assert np.isfinite(ok["logp"].astype(float)).all() and (ok["logp_std"].astype(float) >= 0).all()
    bad = res[res.status != "ok"]
    assert (bad["logp"] == "").all()
    # no prediction, no domain: an empty cell, not False
    assert (bad["in_domain"] == "").all() and set(ok["in_domain"]) <= {"True", "False"}


def test_python_predictor_matches_cli_artifact(trained):
    pred = Predictor.from_pretrained(trained)
    df = pred.predict(["CCO", "bad(", "c1ccccc1O"])
    assert list(df.columns) == [
        "smiles",
        "standardized_smiles",
        "logp",
        "logp_unit",
        "logp_std",
        "status",
        "error",
        "in_domain",
        "similarity",
        "logp_low",
        "logp_high",
    ]
    assert df.in_domain[1] is pd.NA  # a failed row has no domain flag (no prediction)
    assert df.in_domain.dtype == "boolean"
    assert df.status.tolist() == ["ok", "invalid_input", "ok"]
    assert np.isnan(df.logp[1])
    again = pred.predict(["c1ccccc1O", "CCO"])
    assert again.logp[0] == pytest.approx(df.logp[2], abs=1e-6)


def test_evaluate_cli_writes_json(trained, tmp_path, esol_path, capsys):
    out = tmp_path / "m.json"
    code = main(
        [
            "evaluate",
            "--model",
            str(trained),
            "--data",
            str(esol_path),
            "--smiles-column",
            "smiles",
            "--target-columns",
            "logp",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["n_evaluated"] == 1128 and result["metrics"]["rmse"] > 0
    assert '"rmse"' in capsys.readouterr().out


def test_cli_errors_are_clean(tmp_path, esol_path, capsys):
    code = main(
        ["train", "--data", str(esol_path), "--target-columns", "nope", "--out", str(tmp_path)]
    )
    assert code == 2
    assert "nope" in capsys.readouterr().err
