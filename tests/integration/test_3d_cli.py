"""3D path end to end through the CLI: OC20 extxyz.gz (NSA, tags, PBC, --per-atom) train ->
predict one row per frame; SMILES with --featurizer 3d (a non-embeddable molecule is a row
error); Predictor.predict_structures on ase / pymatgen objects."""

from __future__ import annotations

import gzip
import json

import ase.io
import numpy as np
import pandas as pd
import pytest

from molprop.cli.main import main
from molprop.inference import Predictor

OC20 = "oc20/oc20_relax_initial_final.extxyz.gz"
TARGET = "energy_dft_total_eV"


@pytest.fixture(scope="module")
def oc20_frames(data_dir):
    frames = ase.io.read(data_dir / OC20, index=":")
    return [a for a in frames if len(a) <= 80]  # the smaller slabs keep the test fast


@pytest.fixture(scope="module")
def oc20_model(tmp_path_factory, oc20_frames):
    tmp = tmp_path_factory.mktemp("oc20")
    data = tmp / "train.extxyz.gz"
    with gzip.open(data, "wt") as handle:
        ase.io.write(handle, oc20_frames[:24], format="extxyz")
    out = tmp / "model"
    params = {
        "tags": True,
        "fixed": True,
        "atom_gaussians": True,
        "max_neighbors": 8,
        "num_gaussians": 16,
    }
    code = main(
        [
            "train",
            "--data",
            str(data),
            "--target-columns",
            TARGET,
            "--featurizer",
            "3d",
            "--featurizer-params",
            json.dumps(params),
            "--cutoff",
            "5.0",
            "--per-atom",
            "--model",
            "nsa",
            "--layers",
            "MSMP S",
            "--hidden-dim",
            "16",
            "--heads",
            "2",
            "--num-seeds",
            "4",
            "--epochs",
            "2",
            "--lr",
            "1e-3",
            "--batch-size",
            "8",
            "--split-type",
            "random",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out


def test_artifact_records_3d_featurizer_and_size_path_off(oc20_model):
    config = json.loads((oc20_model / "config.json").read_text())
    assert config["featurizer"]["kind"] == "3d"
    assert config["featurizer"]["params"]["cutoff"] == 5.0
    assert config["featurizer"]["params"]["tags"] is True
    assert config["task"]["per_atom"] is True
    assert config["model"]["size_path"] is False  # automatic for --per-atom
    # the 3D defaults since featuriser version 4: element-pair Gaussians, and hydrogens as
    # nodes on periodic slabs (include_h unset: only bonded molecules drop them)
    assert config["model"]["pair_rbf"] == 16 and config["featurizer"]["version"] == 4
    assert "include_h" not in config["featurizer"]["params"]
    split = pd.read_csv(oc20_model / "split.csv")
    assert len(split) == 24 and split["smiles"].iloc[0] == "Au8Na24O"  # formula as label


def test_predict_file_one_row_per_frame_in_order(oc20_model, oc20_frames, tmp_path):
    frames = [a.copy() for a in oc20_frames[24:30]]
    frames[2].positions[0, 0] = np.nan  # a broken frame in the middle
    path = tmp_path / "query.extxyz"
    ase.io.write(path, frames, format="extxyz")
    out_csv = tmp_path / "pred.csv"
    assert (
        main(
            ["predict", "--model", str(oc20_model), "--input", str(path), "--output", str(out_csv)]
        )
        == 0
    )
    out = pd.read_csv(out_csv)
    assert out["record"].tolist() == list(range(6))
    assert out["sid"].tolist() == [a.info["sid"] for a in frames]
    assert out["status"].tolist() == ["ok", "ok", "invalid_input", "ok", "ok", "ok"]
    assert "non-finite" in out["error"].iloc[2]
    ok = out["status"] == "ok"
    # the frames' own (DFT) energies stay in their column; the predictions are pred_<target>
    np.testing.assert_allclose(out[TARGET], [a.info[TARGET] for a in frames])
    pred = f"pred_{TARGET}"
    assert np.isfinite(out.loc[ok, pred]).all() and np.isnan(out[pred].iloc[2])
    # per-atom model: reported totals scale with system size like the DFT energies do
    n_atoms = np.array([len(a) for a in frames])[ok.to_numpy()]
    assert np.corrcoef(out.loc[ok, pred], -n_atoms)[0, 1] > 0.9

    # the Python entry point gives the same numbers for ase.Atoms and pymatgen Structures
    from pymatgen.io.ase import AseAtomsAdaptor

    predictor = Predictor.from_pretrained(oc20_model)
    good = [f for i, f in enumerate(frames) if i != 2]
    from_ase = predictor.predict_structures(good)
    np.testing.assert_allclose(from_ase[TARGET], out.loc[ok, pred], rtol=1e-5)
    pmg = predictor.predict_structures([AseAtomsAdaptor.get_structure(f) for f in good[:2]])
    np.testing.assert_allclose(pmg[TARGET], out.loc[ok, pred].iloc[:2], rtol=1e-4)


def test_smiles_with_3d_featurizer_reports_unembeddable_rows(tmp_path, esol_frame):
    frame = esol_frame.iloc[:24].copy()
    frame.loc[5, "smiles"] = "C1#CC1"  # cyclopropyne: RDKit cannot embed a conformer
    data = tmp_path / "esol24.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "model"
    assert (
        main(
            [
                "train",
                "--data",
                str(data),
                "--target-columns",
                "logp",
                "--featurizer",
                "3d",
                "--featurizer-params",
                '{"include_h": false, "num_gaussians": 8}',
                "--split-type",
                "random",
                "--layers",
                "MSMP S",
                "--hidden-dim",
                "16",
                "--heads",
                "2",
                "--num-seeds",
                "4",
                "--epochs",
                "1",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    invalid = pd.read_csv(out / "invalid_rows.csv")
    assert invalid["row"].tolist() == [5] and "could not embed" in invalid["reason"].iloc[0]
    pred = Predictor.from_pretrained(out).predict(["CCO", "C1#CC1", "c1ccccc1O"])
    assert pred["status"].tolist() == ["ok", "invalid_input", "ok"]
    assert "could not embed" in pred["error"].iloc[1]

    # a SMILES file for a 3D model is streamed like any SMILES input (it went to a table
    # reader that split .smi at tabs and wanted a "smiles" header: KeyError)
    smi = tmp_path / "query.smi"
    smi.write_text("CCO ethanol\n\nC1#CC1 cyclopropyne\nc1ccccc1O phenol\n")
    out_csv = tmp_path / "smi_pred.csv"
    assert (
        main(["predict", "--model", str(out), "--input", str(smi), "--output", str(out_csv)]) == 0
    )
    got = pd.read_csv(out_csv, keep_default_na=False)
    assert got["name"].tolist() == ["ethanol", "", "cyclopropyne", "phenol"]
    assert got["status"].tolist() == ["ok", "invalid_input", "invalid_input", "ok"]
    np.testing.assert_allclose(got["logp"][[0, 3]].astype(float), pred["logp"][[0, 2]], rtol=1e-5)
