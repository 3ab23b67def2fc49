"""``GET /v1/jobs/{id}/results?offset=&limit=``: a page of a job's result CSV, the header then
the rows asked for exactly as written (a quoted field holding a line break stays one row,
across chunks), 422 for a bad offset or limit."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api.jobs import result_page
from api.main import create_app
from tests.api.jobs.helpers import job_settings
from tests.api.jobs.test_jobs_lifecycle import run_worker

SMILES = ["CCO", "C1CC", "c1ccccc1O", "CC(=O)O", "CCN", "OCC(O)CO", "not a smiles"]
IDS = ["a", 'b "quoted"', "c\nspans two lines", "d,comma", "e", "f\r\ng", "h"]


def test_result_page_keeps_records_whole_across_parts() -> None:
    parts = ["h1,h2\n", 'a,1\n"b\n', 'x",2\n', "c,3\nd,4\n", 'e,"5 ""q""\n"\n']
    records = ["a,1\n", '"b\nx",2\n', "c,3\n", "d,4\n", 'e,"5 ""q""\n"\n']
    for offset in range(7):
        for limit in (None, 1, 2, 10):
            end = None if limit is None else offset + limit
            got = "".join(result_page(iter(parts), offset, limit))
            assert got == "h1,h2\n" + "".join(records[offset:end]), (offset, limit)
    assert list(result_page(iter([]), 0, 1)) == []


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_pages_of_a_job_are_its_rows_in_order_and_bad_values_are_422(
    db_url, model_dir, tmp_path
) -> None:
    settings = job_settings(model_dir, db_url, tmp_path / "data", job_chunk_rows=3)
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/jobs", json={"model": "solubility", "smiles": SMILES, "ids": IDS})
        assert r.status_code == 202, r.text
        job = r.json()["id"]
        assert run_worker(db_url, model_dir, tmp_path) == 1
        whole = client.get(f"/v1/jobs/{job}/results")
        assert whole.status_code == 200
        full = pd.read_csv(io.StringIO(whole.text), dtype=str, keep_default_na=False)
        assert full["id"].tolist() == IDS
        pages = []
        for offset in range(0, len(SMILES), 2):
            r = client.get(f"/v1/jobs/{job}/results", params={"offset": offset, "limit": 2})
            assert r.status_code == 200, r.text
            page = pd.read_csv(io.StringIO(r.text), dtype=str, keep_default_na=False)
            assert page.columns.tolist() == full.columns.tolist()
            pages.append(page)
        assert [len(p) for p in pages] == [2, 2, 2, 1]
        pd.testing.assert_frame_equal(pd.concat(pages, ignore_index=True), full)
        # past the end: the header alone
        r = client.get(f"/v1/jobs/{job}/results", params={"offset": 100, "limit": 5})
        assert r.status_code == 200 and r.text == whole.text.split("\n", 1)[0] + "\n"
        for params in ({"offset": -1}, {"limit": 0}, {"limit": "many"}, {"limit": 10**9}):
            r = client.get(f"/v1/jobs/{job}/results", params=params)
            assert r.status_code == 422, (params, r.text)
            assert "offset" in r.text or "limit" in r.text
