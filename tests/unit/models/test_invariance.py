"""A molecule's prediction must not depend on its batch, the padding or its atom order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from molprop.data import collate_graphs
from molprop.featurize import Graph2DFeaturizer
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel

F = Graph2DFeaturizer()
SMALL = "CC(=O)Nc1ccc(O)cc1"
LARGE = [
    "CC1=C(C(=O)OC2CCCC2)C(c2ccccc2[N+](=O)[O-])C(C(=O)OCCN(C)Cc2ccccc2)=C(C)N1",
    "OCC3OC(OCC2OC(OC(C#N)c1ccccc1)C(O)C(O)C2O)C(O)C(O)C3O",
    "CCCCCCCCCCCCCCCCCCCC(=O)OCC(COC(=O)CCCCCCC)OC(=O)CCCCCCCCC",
]


def model(kind: str, **kw) -> MolPropModel:
    torch.manual_seed(0)
    cfg = ModelConfig(node_dim=F.node_dim, edge_dim=F.edge_dim, n_tasks=2, token_kind=kind,
                      hidden_dim=32, heads=4, num_seeds=4, **kw)  # fmt: skip
    return MolPropModel(cfg).eval()


def predict(m: MolPropModel, smiles: list[str]) -> np.ndarray:
    with torch.no_grad():
        return m(collate_graphs([F.from_smiles(s) for s in smiles])).numpy()


@pytest.mark.parametrize("kind", ["esa", "nsa"])
@pytest.mark.parametrize("pre_ln", [True, False])
def test_batch_and_padding_invariance(kind, pre_ln):
    m = model(kind, pre_ln=pre_ln, layers="MSMP S")
    alone = predict(m, [SMALL])[0]
    with_large = predict(m, [SMALL, *LARGE])[0]
    large_first = predict(m, [*LARGE, SMALL, "C"])[len(LARGE)]
    np.testing.assert_allclose(with_large, alone, atol=1e-5)
    np.testing.assert_allclose(large_first, alone, atol=1e-5)


def test_padding_matters_if_it_were_unmasked():
    """The invariance test above can fail: without the key mask, padding changes the output."""
    m = model("esa", layers="MSMP")
    from molprop.nn import edge_sets

    original = edge_sets.TokenSet.padding_mask
    try:
        edge_sets.TokenSet.padding_mask = property(lambda self: torch.ones_like(self.valid)[:, None, :])
        alone = predict(m, [SMALL])[0]
        with_large = predict(m, [SMALL, *LARGE])[0]
    finally:
        edge_sets.TokenSet.padding_mask = original
    assert np.abs(alone - with_large).max() > 1e-4


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_atom_order_invariance(kind):
    m = model(kind)
    a = predict(m, ["CC(=O)Nc1ccc(O)cc1"])[0]
    b = predict(m, ["Oc1ccc(NC(C)=O)cc1"])[0]
    np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_edgeless_and_single_atom_molecules_are_finite(kind):
    m = model(kind)
    out = predict(m, ["C", "[Na+].[Cl-]", "O=O", "[He]", "CCO"])
    assert np.isfinite(out).all()
    # the two ions are not invisible: NaCl differs from Na alone
    assert not np.allclose(predict(m, ["[Na+].[Cl-]"]), predict(m, ["[Na+]"]))


def test_swiglu_and_dropout_configs_run_and_differ():
    a = predict(model("esa", mlp_kind="swiglu"), [SMALL])
    b = predict(model("esa"), [SMALL])
    assert np.isfinite(a).all() and not np.allclose(a, b)
