"""Same molecule, same answer: features and predictions must not depend on the atom order.

RDKit's chiral tags (CW/CCW) are relative to the order in which a SMILES lists an atom's
neighbours; the featuriser uses CIP classes instead. Each check renumbers real chiral molecules
from the shipped data at random (``Chem.RenumberAtoms`` + ``MolToSmiles(canonical=False)``), as
a user writing the same molecule differently would, and a planted order-dependent feature (the
raw chiral tag) must make the same checks fail.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem

import molprop.featurize.atoms as atoms_module
import molprop.featurize.bonds as bonds_module
from molprop.data import collate_graphs
from molprop.featurize import Graph2DFeaturizer
from molprop.featurize.stereo import assign_cip_labels, atom_stereo, bond_stereo
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel

F = Graph2DFeaturizer()
N_RENUMBERINGS = 5


def rewrite(smiles: str, rng: random.Random) -> tuple[str, list[int]]:
    """The same molecule written in a random atom order, and for each atom of the rewritten
    SMILES the index of that atom in ``smiles``."""
    mol = Chem.MolFromSmiles(smiles)
    order = list(range(mol.GetNumAtoms()))
    rng.shuffle(order)
    shuffled = Chem.RenumberAtoms(mol, order)
    text = Chem.MolToSmiles(shuffled, canonical=False)
    written = list(shuffled.GetPropsAsDict(True, True)["_smilesAtomOutputOrder"])
    return text, [order[i] for i in written]


def chiral_molecules(data_dir, n: int) -> list[str]:
    """Real molecules from the shipped data with tetrahedral centres and/or E/Z bonds."""
    smiles = []
    for name in ("bbbp.csv.gz", "bace.csv.gz", "Lipophilicity.csv.gz"):
        frame = pd.read_csv(data_dir / "moleculenet" / name)
        column = "mol" if "mol" in frame.columns else "smiles"
        smiles += frame[column].tolist()
    out = []
    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        if mol is None or mol.GetNumAtoms() > 60:
            continue
        tags = [a for a in mol.GetAtoms() if a.GetChiralTag() != Chem.ChiralType.CHI_UNSPECIFIED]
        if tags and Chem.MolToSmiles(mol) != Chem.MolToSmiles(mol, isomericSmiles=False):
            out.append(smi)
        if len(out) == n:
            break
    assert len(out) == n
    return out


@pytest.fixture(scope="module")
def chiral(data_dir) -> list[str]:
    return chiral_molecules(data_dir, 40)


def raw_chiral_tag(atom: Chem.Atom) -> str:
    """The planted bug: the order-relative CW/CCW tag, mapped onto the R/S slots."""
    tag = atom.GetChiralTag()
    return {Chem.ChiralType.CHI_TETRAHEDRAL_CW: "R", Chem.ChiralType.CHI_TETRAHEDRAL_CCW: "S"}.get(
        tag, atom_stereo(atom)
    )


def feature_mismatches(molecules: list[str]) -> int:
    """Molecules whose rewritten forms get other node or edge features (after mapping atoms)."""
    rng = random.Random(0)
    bad = 0
    for smi in molecules:
        g = F.from_smiles(smi)
        edges = {(int(i), int(j)): k for k, (i, j) in enumerate(g.edge_index.T)}
        for _ in range(N_RENUMBERINGS):
            text, origin = rewrite(smi, rng)
            h = F.from_smiles(text)
            same = np.array_equal(h.x, g.x[origin])
            for k, (i, j) in enumerate(h.edge_index.T):
                same = same and np.array_equal(
                    h.edge_attr[k], g.edge_attr[edges[origin[i], origin[j]]]
                )
            if not same:
                bad += 1
                break
    return bad


def test_features_do_not_depend_on_atom_order(chiral, data_dir):
    # stereo bonds too: BBBP has E/Z double bonds
    frame = pd.read_csv(data_dir / "moleculenet" / "bbbp.csv.gz")
    ez = [s for s in frame["smiles"] if "/" in s and Chem.MolFromSmiles(s) is not None][:30]
    labelled = [assign_cip_labels(Chem.MolFromSmiles(s)) for s in ez]
    assert sum(bond_stereo(b) in ("E", "Z") for m in labelled for b in m.GetBonds()) >= 20
    assert feature_mismatches(chiral + ez + ["F/C=C\\F", "C[C@H]1CC[C@@H](C)CC1"]) == 0


def test_planted_order_dependent_feature_is_caught(chiral, monkeypatch):
    def planted(atoms, mol):
        assign_cip_labels(mol)
        return [raw_chiral_tag(a) for a in atoms]

    monkeypatch.setattr(atoms_module, "atom_stereo_classes", planted)
    assert feature_mismatches(chiral) > len(chiral) // 4


def test_stereo_still_tells_enantiomers_and_ez_isomers_apart():
    r, s = F.from_smiles("C[C@@H](N)C(=O)O"), F.from_smiles("C[C@H](N)C(=O)O")
    assert not np.array_equal(r.x, s.x)
    e, z = F.from_smiles("F/C=C/F"), F.from_smiles("F/C=C\\F")
    assert not np.array_equal(e.edge_attr, z.edge_attr)
    assert bonds_module.bond_stereo(Chem.MolFromSmiles("FC=CF").GetBondWithIdx(1)) == "none"


def tiny_model(kind: str) -> MolPropModel:
    torch.manual_seed(0)
    cfg = ModelConfig(
        node_dim=F.node_dim,
        edge_dim=F.edge_dim,
        n_tasks=1,
        token_kind=kind,
        hidden_dim=32,
        heads=4,
        num_seeds=4,
        layers="MSMP S",
    )
    return MolPropModel.from_config(cfg).eval()


def prediction_gap(model: MolPropModel, molecules: list[str]) -> float:
    """Largest |prediction(original) - prediction(rewritten)| over 5 rewrites per molecule."""
    rng = random.Random(1)
    gap = 0.0
    with torch.no_grad():
        for smi in molecules:
            texts = [smi] + [rewrite(smi, rng)[0] for _ in range(N_RENUMBERINGS)]
            out = model(collate_graphs([F.from_smiles(t) for t in texts])).numpy()[:, 0]
            gap = max(gap, float(np.abs(out - out[0]).max()))
    return gap


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_predictions_do_not_depend_on_atom_order(chiral, kind, monkeypatch):
    model = tiny_model(kind)
    assert prediction_gap(model, chiral) < 1e-5

    def planted(atoms, mol):
        assign_cip_labels(mol)
        return [raw_chiral_tag(a) for a in atoms]

    monkeypatch.setattr(atoms_module, "atom_stereo_classes", planted)
    assert prediction_gap(model, chiral) > 1e-4  # the planted bug is visible to the model


def test_shipped_model_gives_the_same_answer_for_rewritten_molecules(chiral):
    from molprop.inference.predictor import Predictor

    predictor = Predictor.from_pretrained("solubility")
    rng = random.Random(2)
    rows = [
        (i, t)
        for i, smi in enumerate(chiral[:30])
        for t in [smi] + [rewrite(smi, rng)[0] for _ in range(N_RENUMBERINGS)]
    ]
    frame = predictor.predict([t for _, t in rows])
    assert (frame["status"] == "ok").all()
    values = frame[predictor.target_names[0]].to_numpy()
    groups = np.asarray([i for i, _ in rows])
    spread = max(np.ptp(values[groups == i]) for i in range(30))
    assert spread < 1e-5


def test_3d_conformers_from_smiles_do_not_depend_on_atom_order(chiral):
    from molprop.featurize import FeaturizerConfig, build_featurizer

    featurizer = build_featurizer(FeaturizerConfig("3d", {"num_gaussians": 16}))
    rng = random.Random(3)
    for smi in chiral[:6]:
        reference = featurizer.from_smiles(smi)
        key = np.sort(np.round(reference.edge_attr.sum(1), 4))
        for _ in range(2):
            graph = featurizer.from_smiles(rewrite(smi, rng)[0])
            assert graph.n_nodes == reference.n_nodes
            np.testing.assert_allclose(np.sort(np.round(graph.edge_attr.sum(1), 4)), key, atol=2e-4)
