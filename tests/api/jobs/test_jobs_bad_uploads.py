"""Hostile job submissions on SQLite and PostgreSQL: uploads that are not UTF-8 text, binary,
a spreadsheet (Excel, old or new), a truncated ``.smi.gz``, file names of 300 characters or with a NUL are answered 4xx with the
reason (or accepted, for a good table under a strange name: the name is never a path), and a
tiny interval level is accepted and served by the worker, not failed later."""

from __future__ import annotations

import gzip
import io
import math

import pandas as pd
import pytest

from api.jobs import upload_name, upload_suffix
from tests.api.jobs.helpers import hiv_smiles
from tests.api.jobs.test_jobs_lifecycle import run_worker

GOOD_SMI = "\n".join(hiv_smiles(20)) + "\n"


def _upload(client, name: str, data: bytes, **fields):
    return client.post(
        "/v1/jobs", files={"file": (name, data)}, data={"model": "solubility", **fields}
    )


def _truncated_gz() -> bytes:
    whole = gzip.compress(("\n".join(hiv_smiles(400)) + "\n").encode())
    return whole[: len(whole) // 2]


def _xlsx() -> bytes:
    """A zip archive laid out like an Excel workbook (what a chemist may upload as is)."""
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    return buffer.getvalue()


BAD_UPLOADS = {
    "latin1.smi": ("CCO\nc1ccccc1 ph\xe9nol\nCCN\n".encode("latin-1"), "not UTF-8"),
    "latin1.csv": ("smiles,name\nCCO,\xe9thanol\n".encode("latin-1"), "not UTF-8"),
    "binary.smi": (bytes(range(256)) * 8, "not UTF-8"),
    "nul.smi": (b"CCO\nCC\x00O\n", "NUL"),
    "cut.smi.gz": (_truncated_gz(), "Compressed file ended"),
    "notgzip.smi.gz": (b"CCO\nCCN\n", "Not a gzipped file"),
    "assay.xlsx": (_xlsx(), "save the sheet as CSV"),
    "assay.csv": (_xlsx(), "is a spreadsheet or zip archive"),  # whatever its name says
    "old.xls": (bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504), "save the sheet as CSV"),
}


@pytest.mark.parametrize("name", sorted(BAD_UPLOADS))
def test_unreadable_upload_is_422_with_reason(jobs_client, name: str) -> None:
    data, reason = BAD_UPLOADS[name]
    r = _upload(jobs_client, name, data)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert reason in detail and f"the upload '{name}'" in detail
    assert "/tmp" not in detail and "molprop-upload-" not in detail
    assert jobs_client.get("/v1/jobs").json()["jobs"] == []


@pytest.mark.parametrize(
    "name",
    [
        "x" * 296 + ".smi",
        "a\x00b.smi",
        "../../../../etc/cron.d/x.smi",
        "con.smi",
        "ü" * 200 + ".smi",
    ],
)
def test_strange_file_names_do_not_matter(jobs_client, name: str) -> None:
    r = _upload(jobs_client, name, GOOD_SMI.encode())
    assert r.status_code == 202, r.text
    assert r.json()["rows_total"] == 20


def test_strange_file_name_with_bad_content_is_422_naming_it_shortly(jobs_client) -> None:
    name = "y" * 300 + ".smi.gz"
    r = _upload(jobs_client, name, _truncated_gz())
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "Compressed file ended" in detail and "y" * 60 in detail and "y" * 100 not in detail


def test_upload_suffix_and_shown_name() -> None:
    assert upload_suffix("a/b/../c.SMI.gz") == ".smi.gz"
    assert upload_suffix("table.tsv") == ".tsv"
    assert upload_suffix("x\x00.exe") == ".csv"
    assert upload_suffix(None) == ".csv"
    assert upload_suffix("x.bin.gz") == ".csv.gz"
    assert upload_name("a\x00b\n.smi") == "a?b?.smi"
    assert len(upload_name("z" * 300)) == 80


@pytest.mark.parametrize("level", [1e-20, 5e-324])
def test_tiny_interval_job_accepted_and_done(jobs_client, db_url, model_dir, tmp_path, level):
    smiles = hiv_smiles(12)
    r = jobs_client.post(
        "/v1/jobs", json={"model": "solubility", "smiles": smiles, "interval": level}
    )
    assert r.status_code == 202, r.text
    form = _upload(jobs_client, "t.smi", GOOD_SMI.encode(), interval=repr(level))
    assert form.status_code == 202, form.text
    assert run_worker(db_url, model_dir, tmp_path) == 2
    for job in (r.json(), form.json()):
        done = jobs_client.get(f"/v1/jobs/{job['id']}").json()
        assert done["status"] == "done", done
        table = pd.read_csv(io.StringIO(jobs_client.get(f"/v1/jobs/{job['id']}/results").text))
        ok = table[table["status"] == "ok"]
        assert len(ok) > 0
        low = next(c for c in table.columns if c.endswith("_low"))
        value, high = ok[low.removesuffix("_low")], ok[low.removesuffix("_low") + "_high"]
        assert all(math.isfinite(v) for v in ok[low])
        assert (ok[low] <= value).all() and (value <= high).all()


@pytest.mark.parametrize("level", ["0", "1", "-1e-20", "nan", "abc"])
def test_bad_interval_in_form_is_422(jobs_client, level: str) -> None:
    r = _upload(jobs_client, "t.smi", GOOD_SMI.encode(), interval=level)
    assert r.status_code == 422, r.text
    assert "interval" in r.text
