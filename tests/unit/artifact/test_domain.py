"""Applicability domain: Tanimoto on packed bits vs RDKit, calibration, storage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from molprop.artifact.domain import (
    DOMAIN_NAME,
    ApplicabilityDomain,
    add_domain_to_artifact,
    fingerprint_bits,
    tanimoto_max,
)

DATA = Path(__file__).resolve().parents[3] / "data" / "moleculenet" / "delaney_chemprop.csv.gz"


@pytest.fixture(scope="module")
def esol_smiles() -> list[str]:
    return pd.read_csv(DATA)["smiles"].head(80).tolist()


def test_tanimoto_matches_rdkit(esol_smiles: list[str]) -> None:
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in esol_smiles]
    queries, reference = esol_smiles[:30], esol_smiles[30:]
    expected = [max(DataStructs.BulkTanimotoSimilarity(fps[i], fps[30:])) for i in range(30)]
    got = tanimoto_max(fingerprint_bits(queries), fingerprint_bits(reference))
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_exclude_self_is_leave_one_out(esol_smiles: list[str]) -> None:
    bits = fingerprint_bits(esol_smiles[:40])
    assert np.all(tanimoto_max(bits, bits) == 1.0)
    loo = tanimoto_max(bits, bits, exclude_self=True)
    brute = [tanimoto_max(bits[i : i + 1], np.delete(bits, i, axis=0))[0] for i in range(40)]
    np.testing.assert_allclose(loo, brute)


def test_matrix_product_path_equals_popcounts_exactly(monkeypatch) -> None:
    """Many queries go through a float32 matrix product over reference chunks; the result must
    be bit-identical to the popcount path, leave-one-out across chunk borders included."""
    import molprop.artifact.domain as domain_module

    smiles = pd.read_csv(DATA)["smiles"].tolist()[:400]
    bits = fingerprint_bits(smiles)
    bits[7] = 0  # an empty fingerprint: similarity 0
    monkeypatch.setattr(domain_module, "_GEMM_CHUNK", 96)  # several chunks, ragged last one
    monkeypatch.setattr(domain_module, "_GEMM_MIN_QUERIES", 1)
    product = tanimoto_max(bits[:150], bits[150:]), tanimoto_max(bits, bits, exclude_self=True)
    monkeypatch.setattr(domain_module, "_GEMM_MIN_QUERIES", 10**9)
    popcount = tanimoto_max(bits[:150], bits[150:]), tanimoto_max(bits, bits, exclude_self=True)
    for a, b in zip(product, popcount):
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    loo = np.delete(product[1], 7)
    assert product[0][7] == product[1][7] == 0.0 and 0.0 < loo.min() < loo.max() <= 1.0


def test_fit_threshold_and_flags(esol_smiles: list[str]) -> None:
    domain = ApplicabilityDomain.fit(esol_smiles)
    loo = tanimoto_max(domain.fingerprints, domain.fingerprints, exclude_self=True)
    assert domain.threshold == pytest.approx(np.percentile(loo, 5))
    flags = domain.in_domain([esol_smiles[0], "[Xe]", "not a smiles", ""])
    assert flags.tolist() == [True, False, False, False]
    assert domain.similarity(["not a smiles"])[0] == 0.0


def test_save_load_round_trip_and_absent(tmp_path: Path, esol_smiles: list[str]) -> None:
    assert ApplicabilityDomain.load(tmp_path) is None
    pd.DataFrame(
        {"row": range(80), "smiles": esol_smiles, "split": ["train"] * 60 + ["test"] * 20}
    ).to_csv(tmp_path / "split.csv")
    path = add_domain_to_artifact(tmp_path)
    assert path == tmp_path / DOMAIN_NAME
    loaded = ApplicabilityDomain.load(tmp_path)
    assert loaded is not None and loaded.fingerprints.shape == (60, 256)
    assert loaded.fingerprints.dtype == np.uint8
    np.testing.assert_array_equal(loaded.fingerprints, fingerprint_bits(esol_smiles[:60]))
    assert loaded.threshold == pytest.approx(ApplicabilityDomain.fit(esol_smiles[:60]).threshold)
    assert b"pickle" not in path.read_bytes()[:200]


def test_size_outside_the_training_range_is_not_in_domain(esol_smiles: list[str]) -> None:
    """Morgan bits hardly see size: a 999-carbon chain has the bits of tetradecane (in the
    training rows), similarity 1.0, yet is far outside the training set's size range."""
    domain = ApplicabilityDomain.fit(esol_smiles)
    sizes = [Chem.MolFromSmiles(s).GetNumHeavyAtoms() for s in esol_smiles]
    assert domain.heavy_atoms == (min(sizes), max(sizes))
    chain = "C" * 999
    assert domain.similarity([chain])[0] == 1.0  # the fingerprint alone would accept it
    low, high = domain.heavy_atoms
    flags = domain.in_domain(
        [chain, "C" * high, "C" * (high + 1), "CCCCCCCCCCCCCC", "C" * (low - 1)]
    )
    assert flags.tolist() == [False, True, False, True, False]


def test_size_range_is_stored_and_old_files_still_load(
    tmp_path: Path, esol_smiles: list[str]
) -> None:
    from safetensors import safe_open
    from safetensors.numpy import save_file

    domain = ApplicabilityDomain.fit(esol_smiles[:60])
    path = domain.save(tmp_path)
    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata()
    assert (int(meta["heavy_atoms_min"]), int(meta["heavy_atoms_max"])) == domain.heavy_atoms
    assert ApplicabilityDomain.load(tmp_path).heavy_atoms == domain.heavy_atoms
    # a file from before the range was stored: loads, and only similarity decides
    old_meta = {k: v for k, v in meta.items() if not k.startswith("heavy_atoms")}
    save_file({"fingerprints": domain.fingerprints}, str(path), old_meta)
    old = ApplicabilityDomain.load(tmp_path)
    assert old is not None and old.heavy_atoms is None
    assert old.in_domain(["C" * 999, "[Xe]"]).tolist() == [True, False]


def test_pretrained_recipes_finish_writes_the_size_range(tmp_path: Path) -> None:
    """``python -m molprop.pretrained_recipes --stage finish`` refits the domain of an existing
    artifact (here a copy of the shipped solubility model) with the size range."""
    import shutil

    from molprop.pretrained_recipes import main

    repo = Path(__file__).resolve().parents[3]
    shutil.copytree(repo / "pretrained" / "solubility", tmp_path / "solubility")
    assert main(["solubility", "--stage", "finish", "--out", str(tmp_path)]) == 0
    split = pd.read_csv(tmp_path / "solubility" / "split.csv")
    train = split.loc[split["split"] == "train", "smiles"]
    sizes = [Chem.MolFromSmiles(s).GetNumHeavyAtoms() for s in train]
    domain = ApplicabilityDomain.load(tmp_path / "solubility")
    assert domain.heavy_atoms == (min(sizes), max(sizes))
    card = (tmp_path / "solubility" / "card.md").read_text()
    assert f"{min(sizes)}–{max(sizes)} heavy atoms" in card


def test_assess_reads_the_fingerprints_the_2d_featuriser_carries(esol_smiles: list[str]) -> None:
    """A prediction hands the domain its featurised graphs: a graph's carried fingerprint and
    heavy-atom count give the same similarity and flag as parsing the SMILES again, rows
    without one (a failed row, a graph of another featuriser) are parsed, and the carried
    values are what is read (a planted fingerprint changes the answer)."""
    from dataclasses import replace

    from molprop.errors import InvalidInputError
    from molprop.featurize.graph2d import Graph2DFeaturizer

    domain = ApplicabilityDomain.fit(esol_smiles[:60])
    queries = [*esol_smiles[60:75], "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "not a smiles"]
    F = Graph2DFeaturizer()
    graphs: list[object] = [F.from_smiles(s) for s in queries[:-1]]
    graphs.append(InvalidInputError("unparsable"))
    graphs[3] = replace(graphs[3], fingerprint=None, heavy_atoms=None)
    expected = domain.assess(queries)
    got = domain.assess(queries, graphs)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert not expected[1][-2] and not expected[1][-1]  # size range; unparsable
    # the carried bits are read: a query given the fingerprint of a training molecule
    planted = list(graphs)
    planted[0] = replace(graphs[0], fingerprint=fingerprint_bits(esol_smiles[:1])[0])
    assert domain.assess(queries, planted)[0][0] == 1.0 != expected[0][0]
    with pytest.raises(ValueError, match="graphs for"):
        domain.assess(queries, graphs[:-1])
