"""A predict job applies the chemistry checks like /v1/predict and ``molprop predict``."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from tests.api.jobs.test_jobs_lifecycle import run_worker

PD_PORPHYRIN = "c1cc2cc3ccc4n3[Pd]n5c(cc1n2)ccc5cc1ccc(c4)n1"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_job_results_have_unsupported_rows_and_standardised_smiles(
    jobs_client, db_url, model_dir, tmp_path
):
    smiles = ["CCO", "[Na+].[Cl-]", PD_PORPHYRIN, "[Na+].[O-]C(=O)c1ccccc1", "C1CC"]
    r = jobs_client.post("/v1/jobs", json={"model": "solubility", "smiles": smiles})
    assert r.status_code == 202, r.text
    assert run_worker(db_url, model_dir, tmp_path) == 1
    r = jobs_client.get(f"/v1/jobs/{r.json()['id']}/results")
    assert r.status_code == 200, r.text
    table = pd.read_csv(io.StringIO(r.text), dtype=str, keep_default_na=False)
    assert table["smiles"].tolist() == smiles
    assert table["status"].tolist() == ["ok", "unsupported", "unsupported", "ok", "invalid_input"]
    assert table["standardized_smiles"].tolist() == ["CCO", "", "", "O=C(O)c1ccccc1", ""]
    failed = table["status"] != "ok"
    assert (table.loc[failed, ["logp", "logp_low", "logp_high", "in_domain"]] == "").all().all()
    assert set(table.loc[~failed, "in_domain"]) <= {"True", "False"}
