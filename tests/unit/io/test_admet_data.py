"""The shipped ADMET tables (data/admet): columns, one row per molecule, plausible labels, and
every endpoint documented in SOURCES.md and the endpoints table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[3] / "data" / "admet"

#: label column -> plausible (low, high), independent of the build script's own ranges
PLAUSIBLE = {
    "logS": (-14.0, 3.0),
    "logD7.4": (-3.0, 6.0),
    "logD": (-6.0, 10.0),
    "dG_hyd_kcal_per_mol": (-30.0, 5.0),
    "logBB": (-4.0, 3.0),
    "ppb_percent": (0.0, 100.0),
    "cl_hep_ul_min_1e6cells": (0.0, 1000.0),
    "log_cl_hlm": (-4.0, 8.0),
    "log_cl_rlm": (-4.0, 8.0),
    "log_cl_mlm": (-4.0, 8.0),
    "pIC50": (0.0, 12.0),
    "pLD50": (-2.0, 12.0),
}
BINARY = {"active", "bbb_permeable", "mutagenic", "failed_tox"}


def endpoints() -> pd.DataFrame:
    return pd.read_csv(DATA / "endpoints.csv")


def test_every_table_is_an_endpoint_and_there_are_at_least_twenty() -> None:
    names = set(endpoints()["name"])
    files = {p.name.removesuffix(".csv.gz") for p in DATA.glob("*.csv.gz")} - {"approved_drugs"}
    assert files == names
    assert len(names) >= 20
    removed = {p.name.removesuffix(".csv.gz") for p in (DATA / "removed").glob("*.csv.gz")}
    assert names | {"approved_drugs"} == removed


@pytest.mark.parametrize("row", endpoints().to_dict("records"), ids=lambda r: r["name"])
def test_endpoint_table(row: dict[str, object]) -> None:
    table = pd.read_csv(DATA / f"{row['name']}.csv.gz")
    label = str(row["label"])
    assert list(table.columns) == ["smiles", "inchikey", label, "n_measurements", "source"]
    assert len(table) >= 500
    assert table["inchikey"].is_unique
    assert table["inchikey"].str.fullmatch(r"[A-Z]{14}-[A-Z]{10}-[A-Z]").all()
    assert table["smiles"].notna().all() and table["source"].notna().all()
    values = table[label].to_numpy(dtype=float)
    assert np.isfinite(values).all()
    if row["task"] == "classification":
        assert label in BINARY
        assert set(np.unique(values)) == {0.0, 1.0}
    else:
        low, high = PLAUSIBLE[label]
        assert values.min() >= low and values.max() <= high
        assert values.std() > 0
    assert row["tdc_metric"] in {"MAE", "Spearman", "AUROC", "AUPRC"}
    assert isinstance(row["unit"], str) and row["unit"]
    if isinstance(row["admet_ai_id"], str):
        assert math.isfinite(float(row["admet_ai_value"]))  # type: ignore[arg-type]


def test_sources_lists_every_endpoint_with_counts() -> None:
    text = (DATA / "SOURCES.md").read_text()
    for row in endpoints().to_dict("records"):
        n = len(pd.read_csv(DATA / f"{row['name']}.csv.gz"))
        line = next(x for x in text.splitlines() if x.startswith(f"| {row['name']} |"))
        assert f"→ {n}" in line
        assert "CC" in line or "MIT" in line  # a licence is named
    assert "approved_drugs.csv.gz" in text


def test_approved_drugs_reference_set() -> None:
    table = pd.read_csv(DATA / "approved_drugs.csv.gz")
    assert list(table.columns) == ["smiles", "inchikey", "source"]
    assert len(table) >= 1000
    assert table["inchikey"].is_unique
    # aspirin and metformin are approved drugs
    assert {"BSYNRYMUTXBXSQ-UHFFFAOYSA-N", "XZWYZXLIPXDOLR-UHFFFAOYSA-N"} <= set(table["inchikey"])
