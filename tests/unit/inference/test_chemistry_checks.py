"""The chemistry checks in prediction: every path (Predictor.predict, predict_frame, the streaming
loop with and without featurising processes) standardises, keeps the input, reports
``unsupported`` without a prediction, and leaves ``in_domain`` missing where nothing was
predicted; the training set's elements travel with the applicability domain."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.domain import ApplicabilityDomain, add_domain_to_artifact
from molprop.artifact.resolve import shipped_models_dir
from molprop.inference import Predictor
from molprop.inference.streaming import predict_stream

PD_PORPHYRIN = "c1cc2cc3ccc4n3[Pd]n5c(cc1n2)ccc5cc1ccc(c4)n1"
SODIUM_BENZOATE = "[Na+].[O-]C(=O)c1ccccc1"
BENZOIC_ACID = "O=C(O)c1ccccc1"
#: astatine: in no molecule of the shipped solubility model's training set, and not a metal
ROWS = ["CCO", "[Na+].[Cl-]", PD_PORPHYRIN, SODIUM_BENZOATE, BENZOIC_ACID, "C1CC", "CC[At]"]
STATUSES = ["ok", "unsupported", "unsupported", "ok", "ok", "invalid_input", "unsupported"]


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    return Predictor.from_pretrained("solubility")


def check_rows(out: pd.DataFrame, target: str) -> None:
    assert out["status"].tolist() == STATUSES
    assert out["standardized_smiles"].tolist()[3:5] == [BENZOIC_ACID, BENZOIC_ACID]
    assert out["standardized_smiles"][0] == "CCO"  # unchanged: the input's own text
    assert out[target][3] == pytest.approx(out[target][4], abs=1e-5)
    failed = out["status"] != "ok"
    assert out.loc[failed, target].isna().all()
    assert out.loc[failed, [f"{target}_low", f"{target}_high"]].isna().all().all()
    assert out.loc[failed, "in_domain"].isna().all()
    assert out.loc[~failed, "in_domain"].notna().all()
    errors = out["error"].tolist()
    assert "inorganic" in errors[1] and "metal Pd" in errors[2] and "contains At" in errors[6]


def test_predict_standardises_and_refuses_what_the_model_does_not_cover(solubility):
    out = solubility.predict(ROWS)
    target = solubility.target_names[0]
    assert out.columns[:2].tolist() == ["smiles", "standardized_smiles"]
    assert out["smiles"].tolist() == ROWS  # the input is kept as given
    check_rows(out, target)
    assert out["in_domain"].dtype == "boolean"
    # the standardised SMILES is what the model read: predicting it gives the same value
    again = solubility.predict(out["standardized_smiles"][3])
    assert again[target][0] == pytest.approx(out[target][3], abs=1e-6)


def test_predict_frame_adds_the_standardised_smiles_after_the_input_columns(solubility):
    frame = pd.DataFrame({"name": [f"m{i}" for i in range(len(ROWS))], "smi": ROWS})
    out = solubility.predict_frame(frame, "smi")
    assert out.columns[:3].tolist() == ["name", "smi", "standardized_smiles"]
    check_rows(out, solubility.target_names[0])


@pytest.mark.parametrize("workers", [0, 1])
def test_streaming_csv_has_statuses_and_empty_in_domain_cells(solubility, tmp_path, workers):
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    pd.DataFrame({"smiles": ROWS}).to_csv(source, index=False)
    predict_stream(solubility, source, out, num_workers=workers, chunk_size=3, progress=False)
    text = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert text["status"].tolist() == STATUSES
    assert text["standardized_smiles"].tolist() == [
        "CCO",
        "",
        "",
        BENZOIC_ACID,
        BENZOIC_ACID,
        "",
        "CC[At]",  # standardised, then refused for its element
    ]
    ok = text["status"] == "ok"
    assert (text.loc[~ok, "in_domain"] == "").all()
    assert set(text.loc[ok, "in_domain"]) <= {"True", "False"}
    check_rows(pd.read_csv(out), solubility.target_names[0])


def test_domain_records_the_training_elements_and_the_predictor_uses_them(tmp_path):
    train = ["CCO", "c1ccccc1O", "CC[Se]CC", "CCCl", "CCN", "CC(=O)O"]
    domain = ApplicabilityDomain.fit(train)
    assert domain.elements == ("C", "Cl", "H", "N", "O", "Se")
    domain.save(tmp_path)
    assert ApplicabilityDomain.load(tmp_path).elements == domain.elements

    model = tmp_path / "model"
    shutil.copytree(shipped_models_dir() / "solubility", model)
    shipped = Predictor.from_pretrained(model)
    assert shipped.domain is not None and shipped.domain.elements is not None
    assert "Se" in shipped.domain.elements  # AqSolDB holds organoselenium compounds
    assert shipped.predict(["CC[Se]CC"])["status"].tolist() == ["ok"]
    # a domain written before the elements were recorded: the organic subset
    replace(shipped.domain, elements=None).save(model)
    old = Predictor.from_pretrained(model)
    assert old.domain is not None and old.domain.elements is None
    assert old.screened.elements is None  # -> the organic subset
    assert old.predict(["CC[Se]CC"])["status"].tolist() == ["unsupported"]
    add_domain_to_artifact(model, train)
    predictor = Predictor.from_pretrained(model)
    assert predictor.screened.elements == frozenset(domain.elements)
    out = predictor.predict(["CC[Se]CC", "CCBr", "CCF"])
    assert out["status"].tolist() == ["ok", "unsupported", "unsupported"]
    assert "training set" in out["error"][1] and np.isfinite(out.iloc[0, 2])
