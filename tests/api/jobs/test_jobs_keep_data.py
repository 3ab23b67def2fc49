"""Job results never lose data, on SQLite and on PostgreSQL: an uploaded table's measured
column named like the target stays as it was (the prediction is ``pred_<target>``), formula
payloads in SMILES and id cells come back quoted, the result equals ``molprop predict`` on the
same table; an SDF upload is refused with the reason (jobs take tables)."""

from __future__ import annotations

import io

import pandas as pd
from rdkit import Chem

from tests.api.conftest import DATA
from tests.api.jobs.test_jobs_lifecycle import expected_csv, run_worker

PAYLOADS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x")', "@SUM(1)", "+1+1"]


def test_upload_with_a_measured_target_column_keeps_it(jobs_client, db_url, model_dir, tmp_path):
    esol = pd.read_csv(DATA / "delaney_chemprop.csv.gz", dtype=str, keep_default_na=False)
    frame = esol.head(30)[["smiles", "logp"]].assign(id=[f"E{i}" for i in range(30)])
    frame.loc[[2, 17], "smiles"] = PAYLOADS[:2]
    frame.loc[[5, 21], "id"] = PAYLOADS[2:]
    source = tmp_path / "measured.csv"
    frame.to_csv(source, index=False)
    r = jobs_client.post(
        "/v1/jobs",
        files={"file": ("measured.csv", source.read_bytes(), "text/csv")},
        data={"model": "solubility", "id_column": "id"},
    )
    assert r.status_code == 202, r.text
    run_worker(db_url, model_dir, tmp_path)
    results = jobs_client.get(f"/v1/jobs/{r.json()['id']}/results")
    assert results.status_code == 200, results.text
    out = pd.read_csv(io.StringIO(results.text), dtype=str, keep_default_na=False)
    assert out.columns[:4].tolist() == ["smiles", "logp", "id", "standardized_smiles"]
    assert out["logp"].tolist() == frame["logp"].tolist()  # measured values, untouched
    predicted = out.loc[out["status"] == "ok", "pred_logp"]
    assert len(predicted) >= 25 and predicted.astype(float).notna().all()
    assert [out["smiles"][i] for i in (2, 17)] == ["'" + p for p in PAYLOADS[:2]]
    assert [out["id"][i] for i in (5, 21)] == ["'" + p for p in PAYLOADS[2:]]
    assert results.text == expected_csv(model_dir, source)  # as `molprop predict` writes it


def test_an_sdf_upload_is_refused_with_the_reason(jobs_client, tmp_path):
    mol = Chem.MolFromSmiles("CCO")
    sdf = Chem.MolToMolBlock(mol) + "$$$$\n"
    r = jobs_client.post(
        "/v1/jobs",
        files={"file": ("library.sdf", sdf.encode(), "chemical/x-mdl-sdfile")},
        data={"model": "solubility"},
    )
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "library.sdf is an SDF file" in detail and "CSV" in detail
