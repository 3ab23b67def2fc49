"""The shipped structure model ``homo_lumo_gap_3d``.

A small config JSON + safetensors artifact on the split of the 2D ``homo_lumo_gap``; fed its test
molecules as a user feeds them (an extxyz file to ``molprop predict``) it reproduces the test MAE
of its ``metrics.json``; SMILES get a per-row result from one seeded RDKit/MMFF conformer (a
SMILES that cannot be parsed or embedded: ``invalid_input`` with the reason); a real uvicorn
process lists and serves it next to the 2D model."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient
from rdkit import Chem

from api.budget import CONFORMER_TOKENS_PER_ATOM, predictor_costs
from api.main import create_app
from api.settings import Settings
from molprop.chem.structures import read_ase_frames
from molprop.inference import Predictor
from molprop.pretrained_recipes import RECIPES, structure_file
from tests.api.conftest import REPO, uvicorn_server

NAME = "homo_lumo_gap_3d"
SHIPPED = REPO / "pretrained" / NAME
#: parses, embeds; unparsable (open ring); parses but ETKDG cannot embed (docs/results/3d.md)
SMILES = ["CCO", "C1CC", "C1#CC1"]


def metrics() -> dict:
    return json.loads((SHIPPED / "metrics.json").read_text())


def test_artifact_is_small_safetensors_calibrated_on_the_2d_split() -> None:
    files = [p for p in SHIPPED.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 10 * 2**20
    assert not [p for p in files if p.suffix in {".pt", ".pth", ".ckpt", ".pkl", ".bin"}]
    predictor = Predictor.from_pretrained(NAME)  # found by name
    assert predictor.reads_structures and predictor.config.featurizer.kind == "3d"
    assert len(predictor.members) >= 2  # an ensemble: the std the intervals are scaled by
    assert predictor.calibration is not None and predictor.domain is not None
    ours = pd.read_csv(SHIPPED / "split.csv", dtype=str)
    theirs = pd.read_csv(REPO / "pretrained" / "homo_lumo_gap" / "split.csv", dtype=str)
    pd.testing.assert_frame_equal(ours, theirs)  # same molecules in the same parts
    card = (SHIPPED / "card.md").read_text()
    comparison = metrics()["input_comparison"]
    for key in ("dft_geometry", "conformer", "smiles_2d"):
        assert f"**{comparison[key]['mae']:.3f} eV**" in card
    assert comparison["n_test"] == (ours["split"] == "test").sum() == 728
    assert "Expected input: a DFT-quality" in card and "`homo_lumo_gap`" in card


def test_cli_on_the_test_structures_reproduces_metrics_json(tmp_path: Path) -> None:
    """``molprop predict --model homo_lumo_gap_3d --input test.extxyz``: one row per frame,
    all predicted, with intervals; the MAE is the test MAE written at training."""
    path = structure_file(RECIPES[NAME], tmp_path, ("test",))
    out = tmp_path / "out.csv"
    command = [sys.executable, "-m", "molprop.cli.main", "predict", "--model", NAME]
    command += ["--input", str(path), "--output", str(out), "--no-progress"]
    subprocess.run(command, check=True, cwd=tmp_path, capture_output=True, timeout=300)
    frame = pd.read_csv(out)
    truth = np.array([a.info["gap_ev"] for a in read_ase_frames(path, path.name)])
    assert len(frame) == len(truth) == 728 and (frame["status"] == "ok").all()
    assert {"gap_ev_std", "gap_ev_low", "gap_ev_high"} <= set(frame.columns)
    # the frames' own gap_ev (the truth) is kept; the prediction is pred_gap_ev
    np.testing.assert_allclose(frame["gap_ev"].to_numpy(), truth)
    mae = float(np.abs(frame["pred_gap_ev"].to_numpy() - truth).mean())
    assert mae == pytest.approx(metrics()["test"]["ensemble"]["mae"], abs=1e-5)
    assert mae == pytest.approx(metrics()["input_comparison"]["dft_geometry"]["mae"], abs=1e-5)


def test_smiles_rows_get_one_conformer_or_a_clear_error() -> None:
    out = Predictor.from_pretrained(NAME).predict(SMILES)
    assert out["status"].tolist() == ["ok", "invalid_input", "invalid_input"]
    assert math.isfinite(out["gap_ev"][0]) and out["gap_ev"][1:].isna().all()
    assert out["error"][1] and out["error"][2]  # a reason per failed row
    assert str(out["in_domain"].dtype) == "boolean"  # nullable: no prediction, no flag
    assert out["in_domain"].isna().tolist() == (out["status"] != "ok").tolist()


def test_request_budget_counts_its_real_tokens() -> None:
    """Mode ``bonds`` on heavy atoms: the tokens are the SMILES's directed bonds (not the radius
    graph bound, ~4x more for QM9-sized molecules, which refused requests the model can serve)."""
    predictor = Predictor.from_pretrained(NAME)
    smiles = ["CCO", "CC(=O)Oc1ccccc1C(=O)O", "OCC(O)CO", "N#CC1=CC=CN1"]
    tokens = [predictor.featurizer.from_smiles(s).n_edges for s in smiles]
    costs = predictor_costs(smiles, predictor)
    assert [c.tokens for c in costs] == tokens
    # the conformer is embedded with its hydrogens: each of its atoms counts as work
    embedded = [Chem.AddHs(Chem.MolFromSmiles(s)).GetNumAtoms() for s in smiles]
    assert [c.conformer_atoms for c in costs] == embedded
    assert [c.work for c in costs] == [
        t + CONFORMER_TOKENS_PER_ATOM * a for t, a in zip(tokens, embedded)
    ]


def test_a_thousand_drug_like_smiles_are_refused_up_front_pointing_to_jobs(
    tmp_path: Path,
) -> None:
    """Conformers of 1,000 drug-like molecules take minutes: 413 before any is embedded
    (not a 504 after the deadline), saying to submit a job; one molecule is served."""
    models = tmp_path / "models"
    shutil.copytree(SHIPPED, models / NAME)
    lipo = pd.read_csv(REPO / "data" / "moleculenet" / "lipo_chemprop.csv.gz", nrows=1000)
    settings = Settings(model_dir=models, data_dir=tmp_path / "data", job_workers=0)
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/predict", json={"model": NAME, "smiles": lipo["smiles"].tolist()})
        assert r.status_code == 413, r.text
        detail = r.json()["detail"]
        assert "conformer" in detail and "MOLPROP_MAX_REQUEST_TOKENS" in detail
        assert "submit a job (POST /v1/jobs)" in detail
        one = client.post("/v1/predict", json={"model": NAME, "smiles": ["CCO"]})
        assert one.status_code == 200 and one.json()["results"][0]["status"] == "ok"


def test_service_lists_and_serves_it_next_to_the_2d_model(tmp_path: Path) -> None:
    models = tmp_path / "models"
    for name in (NAME, "homo_lumo_gap"):
        shutil.copytree(REPO / "pretrained" / name, models / name)
    expected = Predictor.from_pretrained(NAME).predict(SMILES[:1])["gap_ev"][0]
    with uvicorn_server(models, tmp_path / "server.log", job_workers="0") as base:
        listed = {m["name"]: m for m in httpx.get(f"{base}/v1/models", timeout=30).json()}
        assert set(listed) == {NAME, "homo_lumo_gap"}
        assert listed[NAME]["test_metrics"]["mae"] == pytest.approx(
            metrics()["test"]["ensemble"]["mae"]
        )
        body = {"model": NAME, "smiles": SMILES}
        answer = httpx.post(f"{base}/v1/predict", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        rows = answer.json()["results"]
        assert [r["status"] for r in rows] == ["ok", "invalid_input", "invalid_input"]
        assert rows[0]["value"] == pytest.approx(expected, abs=1e-5)
        assert rows[0]["interval"]["low"] < rows[0]["value"] < rows[0]["interval"]["high"]
        assert all(r["error"] for r in rows[1:])
