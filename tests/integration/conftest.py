"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pandas as pd
import pytest

from molprop.transfer.datasets import g4mp2_ip_frame


@pytest.fixture(scope="session")
def g4mp2_csv(tmp_path_factory, data_dir):
    """200 real G4MP2 rows (seeded sample) as ``smiles, ip_b3lyp, ip_g4mp2`` (eV)."""
    root = tmp_path_factory.mktemp("g4")
    raw = pd.read_csv(data_dir / "multifidelity" / "g4mp2_ip_3405.csv.gz")
    raw.sample(200, random_state=0).to_csv(root / "raw.csv", index=False)
    frame, issues = g4mp2_ip_frame(root / "raw.csv")
    assert len(frame) == 200 and not issues
    frame.to_csv(root / "g4mp2_ip.csv", index=False)
    return root / "g4mp2_ip.csv"
