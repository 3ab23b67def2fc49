"""The pretraining corpus: standardised, deduplicated by InChIKey, failures listed, rebuilt
byte-identically; descriptor labels with NaN / inf masked."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from rdkit.Chem import Descriptors

from molprop.corpus import labels as labels_mod
from molprop.corpus.build import CorpusSource, build_corpus, default_sources, read_corpus
from molprop.corpus.labels import compute_labels, descriptor_row, load_scaled_labels

# forms of molecules already in ESOL (salt, ion, a different SMILES) and bad inputs
EXTRA = [
    "OC(=O)c1ccccc1",  # benzoic acid
    "[Na+].[O-]C(=O)c1ccccc1",  # sodium benzoate -> benzoic acid: a duplicate
    "c1ccccc1C(O)=O",  # benzoic acid written differently: a duplicate
    "C1CC",  # unclosed ring: unparsable
    "[Na+].[Cl-]",  # inorganic
    "CC[Pt]",  # metal
]


@pytest.fixture
def sources(tmp_path, esol_frame):
    a = tmp_path / "a.csv"
    esol_frame[["smiles"]].head(200).to_csv(a, index=False)
    b = tmp_path / "b.csv"
    # overlaps a.csv on its first 50 rows
    pd.DataFrame({"SMILES": [*esol_frame["smiles"].head(50), *EXTRA]}).to_csv(b, index=False)
    return [CorpusSource("a", str(a), "test"), CorpusSource("b", str(b), "test")]


def test_corpus_dedupes_by_inchikey_and_lists_every_failure(tmp_path, sources):
    manifest = build_corpus(sources, tmp_path / "c", workers=1, progress=False)
    corpus = pd.read_csv(tmp_path / "c" / "corpus.csv")
    failures = pd.read_csv(tmp_path / "c" / "failures.csv")
    a, b = manifest["sources"]
    assert corpus["inchikey"].is_unique
    assert len(corpus) == manifest["molecules"] == a["added"] + b["added"]
    # b: its 50 ESOL rows and the two other forms of benzoic acid are duplicates
    assert b["duplicates"] == 52 and b["added"] == 1
    assert b["failed"] == 3 and b["rows"] == b["ok"] + b["failed"] == 56
    assert a["rows"] == a["ok"] + a["failed"] and a["ok"] == a["added"] + a["duplicates"]
    # every rejected row is listed with its reason, none silently lost
    assert len(failures) == manifest["totals"]["failed"]
    bad = failures[failures["source"] == "b"].set_index("input")["reason"]
    assert set(bad.index) == {"C1CC", "[Na+].[Cl-]", "CC[Pt]"}
    assert "inorganic" in bad["[Na+].[Cl-]"] and "Pt" in bad["CC[Pt]"]
    # standardised: benzoate kept once, neutral
    assert "O=C(O)c1ccccc1" in set(corpus["smiles"])
    assert not corpus["smiles"].str.contains(r"\.|\[Na").any()
    assert manifest["files"]["corpus.csv"] and a["sha256"]


def test_corpus_rebuilds_byte_identically(tmp_path, sources):
    build_corpus(sources, tmp_path / "one", workers=1, progress=False)
    build_corpus(sources, tmp_path / "two", workers=2, progress=False)
    for name in ("corpus.csv", "failures.csv", "manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    other = build_corpus(sources, tmp_path / "three", workers=1, seed=1, progress=False)
    assert read_corpus(tmp_path / "three") != read_corpus(tmp_path / "one")
    assert sorted(read_corpus(tmp_path / "three")) == sorted(read_corpus(tmp_path / "one"))
    assert other["molecules"] == len(read_corpus(tmp_path / "one"))


def test_default_sources_find_smiles_tables_only(tmp_path):
    (tmp_path / "x.csv").write_text("smiles,y\nCCO,1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "y.csv").write_text("mol,Class\nCCN,0\n")
    (tmp_path / "z.csv").write_text("sid,energy\n1,2\n")
    names = [s.name for s in default_sources(None, tmp_path)]
    assert names == ["shared/sub/y.csv", "shared/x.csv"]


def _fake_descriptors():
    def sometimes_nan(mol):
        return float("nan") if mol.GetNumAtoms() < 6 else float(mol.GetNumAtoms())

    def boom(mol):
        raise ValueError("descriptor bug")

    return [
        ("MolWt", Descriptors.MolWt),
        ("sometimes_nan", sometimes_nan),
        ("inf", lambda mol: float("inf")),
        ("huge", lambda mol: 1e300),
        ("raises", boom),
        ("constant", lambda mol: 1.0),
    ]


def test_descriptor_values_that_are_nan_inf_or_raise_are_masked(monkeypatch):
    monkeypatch.setattr(Descriptors, "_descList", _fake_descriptors())
    row, reason = descriptor_row("CCO")
    assert reason == ""
    assert row[0] == pytest.approx(46.069, abs=1e-3)
    assert np.isnan(row[1:5]).all() and row[5] == 1.0
    row, reason = descriptor_row("not a smiles")
    assert reason and np.isnan(row).all()


def test_labels_mask_nan_drop_useless_columns_and_list_failures(tmp_path, monkeypatch, esol_frame):
    monkeypatch.setattr(Descriptors, "_descList", _fake_descriptors())
    src = tmp_path / "s.csv"
    esol_frame[["smiles"]].head(120).to_csv(src, index=False)
    build_corpus([CorpusSource("s", str(src), "test")], tmp_path, progress=False)
    # a corpus row that the descriptor code cannot read is listed, not lost
    lines = (tmp_path / "corpus.csv").read_text().splitlines()
    lines[3] = "C1CC,FAKE-KEY,s"
    (tmp_path / "corpus.csv").write_text("\n".join(lines) + "\n")
    meta = compute_labels(tmp_path, 100, workers=1, shard_size=40, progress=False)
    assert meta["names"] == ["MolWt", "sometimes_nan"]
    assert set(meta["dropped"]) == {"inf", "huge", "raises", "constant"}
    assert meta["n_failed"] == 1 and len(meta["shards"]) == 3
    with open(tmp_path / "labels" / "failures.csv") as fh:
        assert list(csv.reader(fh))[1][:2] == ["2", "C1CC"]
    y, stats = load_scaled_labels(tmp_path / "labels")
    assert y.shape == (100, 2) and stats["clip"] == labels_mod.DEFAULT_CLIP
    smiles = read_corpus(tmp_path, 100)
    from rdkit import Chem

    small = np.array(
        [(m := Chem.MolFromSmiles(s)) is not None and m.GetNumAtoms() < 6 for s in smiles]
    )
    assert small.any()
    assert np.isnan(y[small, 1]).all() and np.isfinite(y[~small & (np.arange(100) != 2), 1]).all()
    assert np.isnan(y[2]).all()
    assert meta["n_masked_values"] == int(
        np.isnan(np.concatenate([np.load(tmp_path / "labels" / p) for p in meta["shards"]])).sum()
    )
    assert np.nanmax(np.abs(y)) <= stats["clip"]
    # robust scaling: the scaled MolWt has median 0 over the labelled molecules
    assert abs(np.nanmedian(y[:, 0])) < 1e-5
    # cached shards are reused: a second call gives the same file bytes
    before = (tmp_path / "labels" / "desc_00000.npy").stat().st_mtime_ns
    assert compute_labels(tmp_path, 100, workers=1, shard_size=40, progress=False) == meta
    assert (tmp_path / "labels" / "desc_00000.npy").stat().st_mtime_ns == before
    assert json.loads((tmp_path / "labels" / "meta.json").read_text())["n_molecules"] == 100


def test_the_descriptor_timeout_counts_cpu_time_not_waiting(monkeypatch):
    import time

    def sleeps(mol):  # waiting, as a process does on a busy machine: no CPU used
        time.sleep(0.3)
        return 1.0

    def spins(mol):
        end = time.process_time() + 2.0
        while time.process_time() < end:
            pass
        return 1.0

    monkeypatch.setattr(Descriptors, "_descList", [("sleeps", sleeps)])
    row, reason = descriptor_row("CCO", timeout_s=0.1)
    assert reason == "" and row[0] == 1.0
    monkeypatch.setattr(Descriptors, "_descList", [("spins", spins)])
    row, reason = descriptor_row("CCO", timeout_s=0.1)
    assert "timed out" in reason and np.isnan(row).all()
