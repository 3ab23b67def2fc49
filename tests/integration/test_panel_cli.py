"""``molprop predict --model admet``: the shipped panel through the CLI on real ESOL rows; the
input's columns come back unchanged, every endpoint is its model's prediction, a bad row and an
unreadable SDF record keep their place with the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.cli.main import main
from molprop.inference import Panel, Predictor
from tests.integration.test_predict_keeps_data import _sdf_with_a_garbage_record

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def given() -> pd.DataFrame:
    """12 ESOL rows as text with their measured solubility under the panel's target name,
    a ``status`` column of the chemist's own and a row that is no molecule."""
    esol = pd.read_csv(REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz", dtype=str)
    rows = esol.sample(12, random_state=5).reset_index(drop=True)
    frame = pd.DataFrame(
        {
            "compound": [f"c{i}" for i in range(12)],
            "smi": rows["smiles"],
            "solubility_aqsoldb": rows["logp"],
            "status": "registered",
        }
    )
    bad = pd.DataFrame(
        {"compound": ["typo"], "smi": ["C1CC"], "solubility_aqsoldb": [""], "status": ["new"]}
    )
    return pd.concat([frame.iloc[:5], bad, frame.iloc[5:]], ignore_index=True)


def _run(tmp_path: Path, source: Path, *extra: str) -> pd.DataFrame:
    out = tmp_path / "panel.csv"
    argv = ["predict", "--model", "admet", "--input", str(source), "--output", str(out)]
    assert main([*argv, *extra]) == 0
    assert not (tmp_path / "panel.csv.partial").exists()
    return pd.read_csv(out, dtype=str, keep_default_na=False)


def test_the_admet_panel_keeps_input_columns_and_equals_each_model(
    tmp_path: Path, given: pd.DataFrame, capsys: pytest.CaptureFixture, caplog
) -> None:
    source = tmp_path / "in.csv"
    given.to_csv(source, index=False)
    with caplog.at_level("WARNING", logger="molprop.cli.predict_panel"):
        out = _run(tmp_path, source, "--smiles-column", "smi", "--chunk-size", "5")
    assert "13 rows written" in capsys.readouterr().out
    # the run says which endpoints' 90 % intervals fell significantly short in their test
    warned = [r.getMessage() for r in caplog.records if "too narrow" in r.getMessage()]
    assert warned == Panel.from_name("admet").coverage_warnings(0.9) and warned
    assert any(w.startswith("admet_regression clearance_microsome_rat:") for w in warned)
    assert out.columns[:4].tolist() == ["compound", "smi", "solubility_aqsoldb", "status"]
    assert out[given.columns].equals(given.astype(str))  # untouched
    assert out["pred_status"].tolist() == ["ok"] * 5 + ["invalid_input"] + ["ok"] * 7
    assert "RDKit" in out["error"][5] and out["pred_solubility_aqsoldb"][5] == ""
    panel = Panel.from_name("admet")
    ok = out["pred_status"] == "ok"
    for model in panel.model_names:
        predictor = Predictor.from_pretrained(model)
        alone = predictor.predict(given["smi"].tolist())
        for target in [e.target for e in panel.endpoints if e.model == model]:
            column = f"pred_{target}" if target in given.columns else target
            np.testing.assert_allclose(  # float32 models, other batches (chunks of 5 rows)
                out.loc[ok, column].astype(float), alone.loc[ok, target], rtol=1e-5, atol=1e-6
            )
            np.testing.assert_allclose(
                out.loc[ok, f"{target}_similarity"].astype(float), alone.loc[ok, "similarity"]
            )
    assert (out.loc[ok, "molecular_weight"].astype(float) > 0).all()


def test_an_unreadable_sdf_record_is_its_rows_reason(tmp_path: Path) -> None:
    source = tmp_path / "five.sdf"
    _sdf_with_a_garbage_record(source)
    out = _run(tmp_path, source, "--chunk-size", "2")
    assert out["name"].tolist() == ["m0", "", "m1", "m2", "m3"]
    assert out["logS"].tolist() == ["-0.25", "", "-1.25", "-2.25", "-3.25"]  # kept
    assert out["status"].tolist() == ["ok", "invalid_input", "ok", "ok", "ok"]
    assert "SDF record 1" in out["error"][1] and out["lipophilicity_az"][1] == ""


def test_single_model_options_are_refused_for_a_panel(
    tmp_path: Path, given: pd.DataFrame, capsys: pytest.CaptureFixture
) -> None:
    source = tmp_path / "in.csv"
    given.to_csv(source, index=False)
    argv = ["predict", "--model", "admet", "--input", str(source), "--smiles-column", "smi"]
    assert main([*argv, "--output", str(tmp_path / "o.csv"), "--resume"]) == 2
    assert "'admet' is a panel" in capsys.readouterr().err
    assert main([*argv, "--output", str(tmp_path / "o.csv"), "--interval", "0.999"]) == 2
    assert "model 'admet_regression': interval level 0.999" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_worker_processes_answer_like_one_process(tmp_path: Path, given: pd.DataFrame) -> None:
    """``--num-workers 2``: the same rows in the same order, every text column identical and
    every number equal up to float32 batching (the slices are other batches)."""
    source = tmp_path / "in.csv"
    given.to_csv(source, index=False)
    alone = _run(tmp_path, source, "--smiles-column", "smi")
    pooled = _run(tmp_path, source, "--smiles-column", "smi", "--num-workers", "2")
    assert pooled.columns.tolist() == alone.columns.tolist()
    assert pooled["compound"].tolist() == given["compound"].tolist()
    numeric = [c for c in alone.columns if pd.to_numeric(alone[c], errors="coerce").notna().any()]
    text = [c for c in alone.columns if c not in numeric]
    assert "pred_status" in text and "pains_alerts" in text and "tox21_nr_ar" in numeric
    assert pooled[text].equals(alone[text])
    for column in numeric:
        a, b = (pd.to_numeric(f[column], errors="coerce") for f in (alone, pooled))
        assert (a.isna() == b.isna()).all(), column
        np.testing.assert_allclose(b[a.notna()], a[a.notna()], rtol=1e-4, atol=1e-5, err_msg=column)
