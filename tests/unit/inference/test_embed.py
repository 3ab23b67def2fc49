"""Predictor.embed: the readout output that feeds the head, one row per input, independent of
the batch and of how a molecule is written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem

from molprop import Predictor
from molprop.models.predict import forward_members


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    return Predictor.from_pretrained("solubility")


def emb(frame: pd.DataFrame) -> np.ndarray:
    return frame.filter(regex=r"^emb_\d+$").to_numpy(dtype=float)


def test_rows_statuses_and_columns(solubility: Predictor) -> None:
    smiles = ["CCO", "not a smiles", "c1ccccc1O", "C1CC"]
    out = solubility.embed(smiles)
    dim = solubility.embedding_dim
    assert dim == solubility.members[0].readout.out_dim
    assert list(out.columns) == ["smiles", *[f"emb_{j}" for j in range(dim)], "status", "error"]
    assert out["smiles"].tolist() == smiles
    assert out["status"].tolist() == ["ok", "invalid_input", "ok", "invalid_input"]
    assert out["error"].iloc[0] == "" and "whitespace" in out["error"].iloc[1]
    assert out["error"].iloc[3] != ""
    values = emb(out)
    assert np.isfinite(values[[0, 2]]).all() and np.isnan(values[[1, 3]]).all()
    assert np.abs(values[0] - values[2]).max() > 1e-3  # different molecules, different vectors


def test_embedding_is_what_member_zero_head_reads(solubility: Predictor) -> None:
    """The head of member 0 applied to the embedding gives member 0's prediction."""
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1"]
    vectors = emb(solubility.embed(smiles))
    graphs = solubility.featurize(smiles)
    raw = forward_members(solubility.members, graphs)  # (members, n, 1) scaled outputs
    with torch.no_grad():
        head0 = solubility.members[0].head(torch.tensor(vectors, dtype=torch.float32))  # a copy
    np.testing.assert_allclose(head0.numpy(), raw[0], atol=1e-5)
    assert np.abs(raw[1] - raw[0]).max() > 1e-4  # another member would give another answer


def test_independent_of_atom_order(solubility: Predictor) -> None:
    smiles = ["CC(=O)Nc1ccc(O)cc1", "C[C@H](N)C(=O)O", "O=C(O)c1ccccc1OC(C)=O", "CCN(CC)CC"]
    rng = np.random.default_rng(0)
    rewritten = []
    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        order = rng.permutation(mol.GetNumAtoms()).tolist()
        other = Chem.MolToSmiles(Chem.RenumberAtoms(mol, order), canonical=False)
        assert other != smi
        rewritten.append(other)
    a, b = emb(solubility.embed(smiles)), emb(solubility.embed(rewritten))
    assert np.isfinite(a).all()
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_independent_of_batch(solubility: Predictor, esol_frame: pd.DataFrame) -> None:
    smiles = esol_frame["smiles"].iloc[:50].tolist()
    together = emb(solubility.embed(smiles))
    alone = np.vstack([emb(solubility.embed([s])) for s in smiles])
    assert np.isfinite(together).all()
    np.testing.assert_allclose(together, alone, atol=1e-5, rtol=0)
    small_batches = emb(solubility.embed(smiles, batch_size=7))
    np.testing.assert_allclose(together, small_batches, atol=1e-5, rtol=0)


def test_heavy_atom_limit_is_a_row_error(solubility: Predictor) -> None:
    out = solubility.embed(["CCO", "CCCCCCCCCCCC"], max_heavy_atoms=5)
    assert out["status"].tolist() == ["ok", "invalid_input"]
    assert "heavy atoms" in out["error"].iloc[1]
    assert np.isnan(emb(out)[1]).all()
