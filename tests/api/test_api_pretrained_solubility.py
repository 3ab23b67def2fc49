"""The shipped ``solubility`` model: fine-tuned from the foundation model on AqSolDB
(``data/admet``), on the scaffold split that ``admet_regression`` gives those molecules, with the
test molecules of ESOL's scaffold split kept out of training; fed its test SMILES as a user
feeds them (``molprop predict``) it reproduces the test metrics of its ``metrics.json``; it won
against the ESOL-trained model it replaced on molecules neither trained on, and its card says so."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.store import load_config
from molprop.data.splits import make_split
from molprop.pretrained_recipes import RECIPES, labelled_table, molecule_key
from tests.api.conftest import REPO

NAME = "solubility"
SHIPPED = REPO / "pretrained" / NAME
AQSOLDB = REPO / "data" / "admet" / "solubility_aqsoldb.csv.gz"
ESOL = REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"


def metrics() -> dict:
    return json.loads((SHIPPED / "metrics.json").read_text())


def split(directory: Path) -> pd.DataFrame:
    return pd.read_csv(directory / "split.csv", dtype={"smiles": str, "split": str})


def test_trained_on_aqsoldb_from_the_foundation_in_its_units() -> None:
    config = load_config(SHIPPED)
    assert config.provenance.data == "data/admet/solubility_aqsoldb.csv.gz"
    assert config.provenance.finetuned_from == "pretrained/foundation"
    assert config.task.target_names == ("logS",) and config.task.units == ("log10(mol/L)",)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert config.task.resolve_target("logp") == "logS"  # the former name still answers
    assert any(issubclass(w.category, FutureWarning) for w in caught)
    card = (SHIPPED / "card.md").read_text()
    assert "AqSolDB" in card and "ESOL" not in card.split("## Split")[0]


def test_split_is_admet_regressions_and_esol_test_molecules_are_not_trained_on() -> None:
    """Every molecule is in the part ``admet_regression`` gives it, the test part is exactly
    that model's AqSolDB test molecules, and no molecule of ESOL's scaffold test part (the
    replaced model's test molecules) is in train or validation."""
    ours = split(SHIPPED)
    theirs = split(REPO / "pretrained" / "admet_regression")
    part = dict(zip(theirs["smiles"], theirs["split"]))
    assert [part[s] for s in ours["smiles"]] == ours["split"].tolist()
    aqsoldb = pd.read_csv(AQSOLDB, dtype={"smiles": str})
    admet_test = {s for s in aqsoldb["smiles"] if part.get(s) == "test"}
    assert set(ours.loc[ours["split"] == "test", "smiles"]) == admet_test
    esol = pd.read_csv(ESOL, dtype={"smiles": str})["smiles"].tolist()
    test_rows = make_split("scaffold", esol, seed=0).test  # as `molprop train` split ESOL
    assert len(test_rows) == 114
    esol_test = {molecule_key(esol[i]) for i in test_rows}  # 113 molecules (one twice)
    trained = {molecule_key(s) for s in ours.loc[ours["split"] != "test", "smiles"]}
    assert not esol_test & trained
    tested = {molecule_key(s) for s in ours.loc[ours["split"] == "test", "smiles"]}
    kept = metrics()["split_source"]["kept_out"]
    assert kept["test_molecules"] == len(esol_test)
    assert kept["in_test"] == len(esol_test & tested) > 0
    assert kept["removed"] > 0 and kept["in_test"] + kept["removed"] == kept["in_data"]
    # the rows left out of the table: those removed and one SMILES RDKit cannot read
    assert len(aqsoldb) - len(ours) == kept["removed"] + 1


def test_cli_on_the_test_smiles_reproduces_metrics_json(tmp_path: Path) -> None:
    """``molprop predict --model solubility`` on the test molecules (the labels of the table
    the recipe trained on): every row predicted, with intervals; MAE and RMSE are the test
    metrics written at training."""
    rows = split(SHIPPED)
    test = rows[rows["split"] == "test"]
    table = labelled_table(RECIPES[NAME]).iloc[test["row"].to_numpy()]
    assert table["smiles"].tolist() == test["smiles"].tolist()
    data = tmp_path / "test.csv"
    table.rename(columns={"logS": "measured"}).to_csv(data, index=False)
    out = tmp_path / "out.csv"
    # this checkout's artifact (a name could resolve to another install's shipped models)
    command = [sys.executable, "-m", "molprop.cli.main", "predict", "--model", str(SHIPPED)]
    command += ["--input", str(data), "--smiles-column", "smiles", "--output", str(out)]
    subprocess.run([*command, "--no-progress"], check=True, cwd=tmp_path, timeout=600)
    frame = pd.read_csv(out)
    assert len(frame) == len(table) and (frame["status"] == "ok").all()
    assert {"logS_std", "logS_low", "logS_high"} <= set(frame.columns)
    error = frame["logS"].to_numpy() - frame["measured"].to_numpy()
    want = metrics()["test"]["ensemble"]
    assert want["n"] == len(frame)
    assert float(np.abs(error).mean()) == pytest.approx(want["mae"], abs=1e-5)
    assert float(np.sqrt((error**2).mean())) == pytest.approx(want["rmse"], abs=1e-5)


def test_it_beat_the_replaced_esol_model_on_molecules_neither_trained_on() -> None:
    held = metrics()["previous"]["held_out"]
    assert held["replaced_data"] == "data/moleculenet/delaney_chemprop.csv.gz"
    common = held["common"]
    assert common["n"] > 500 and common["n"] == common["this_model"]["n"]
    assert common["this_model"]["mae"] < common["replaced"]["mae"]
    assert common["this_model"]["rmse"] < common["replaced"]["rmse"]
    card = (SHIPPED / "card.md").read_text()
    mae = f"mae {common['replaced']['mae']:.3f} -> **{common['this_model']['mae']:.3f}**"
    assert f"On the {common['n']} test molecules" in card and mae in card
