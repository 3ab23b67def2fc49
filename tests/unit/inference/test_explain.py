"""Atom attributions (molprop.inference.explain): tokens land on the right atoms, completeness,
per-row errors, pictures, and the nitrogen check on models trained on real ESOL
molecules (target: the number of N atoms; >= 90 % of the positive attribution mass on N)."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem

from molprop.data.batch import collate_graphs
from molprop.featurize import Graph2DFeaturizer
from molprop.inference import Predictor
from molprop.inference.explain import (
    RTOL,
    Explanation,
    atom_weights,
    atoms_frame,
    molecules_frame,
    token_endpoints,
)
from molprop.models.config import TrainConfig
from molprop.nn.edge_sets import token_set

#: isolated atoms (ions, methane), rings, charges, a lone N, isotopes and explicit H
MOLECULES = ["CCO", "[Na+].[Cl-]", "C", "c1ccncc1", "CC(=O)[O-].[NH4+]", "[2H]OC", "N"]


def n_nitrogens(smiles: str) -> int:
    return sum(a.GetSymbol() == "N" for a in Chem.MolFromSmiles(smiles).GetAtoms())


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_token_endpoints_are_the_tokens_of_edge_sets(kind: str) -> None:
    """token_endpoints (used to put scores on atoms) describes the tokens nn.edge_sets builds:
    an ESA token's input is [x_src | x_dst | ...] of exactly those two atoms, in that order."""
    feat = Graph2DFeaturizer()
    for smi in MOLECULES:
        graph = feat.from_smiles(smi)
        tokens = token_set(collate_graphs([graph]), kind)
        ends = token_endpoints(graph, kind)
        x = torch.from_numpy(graph.x)
        d = graph.x.shape[1]
        assert len(ends) == tokens.features.shape[0], smi
        if kind == "nsa":
            torch.testing.assert_close(tokens.features, x[ends[:, 0]])
        else:
            torch.testing.assert_close(tokens.features[:, :d], x[ends[:, 0]])
            torch.testing.assert_close(tokens.features[:, d : 2 * d], x[ends[:, 1]])
        assert set(ends.ravel()) == set(range(graph.n_nodes)), f"an atom of {smi} has no token"


def test_atom_weights_split_blocks_onto_their_atoms() -> None:
    """ESA input attributions: x_src block -> source atom, x_dst block -> destination atom,
    bond block + flag half to each; the embedding layer splits whole tokens half-half;
    nothing is lost."""
    d = 2  # node feature width; token = [src(2) | dst(2) | bond(1) | flag(1)]
    ends = np.array([[0, 1], [1, 0], [2, 2]])  # a bond 0-1 both ways, a self-loop on atom 2
    attr = np.array(
        [
            [1.0, 1.0, 10.0, 10.0, 4.0, 0.0],
            [100.0, 0.0, 1000.0, 0.0, 2.0, 0.0],
            [5.0, 0.0, 5.0, 0.0, 0.0, 1.0],
        ]
    )
    got = atom_weights(attr, ends, 3, "esa", "input", d)
    np.testing.assert_allclose(got, [2 + 2 + 1000 + 1, 20 + 2 + 100 + 1, 11])
    assert got.sum() == pytest.approx(attr.sum())
    half = atom_weights(attr, ends, 3, "esa", "embedding", d)
    np.testing.assert_allclose(half, [(26 + 1102) / 2] * 2 + [11])
    nsa = atom_weights(attr[:, :2], np.array([[0, 0], [1, 1], [2, 2]]), 3, "nsa", "input", d)
    np.testing.assert_allclose(nsa, [2, 100, 5])


# --------------------------------------------------------------------------- trained models


@pytest.fixture(scope="module")
def nitrogen_data(esol_frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """ESOL molecules with the target "number of N atoms": 400 to train on, and the held-out
    molecules that contain N (the first 30)."""
    frame = esol_frame[["smiles"]].sample(frac=1.0, random_state=0).reset_index(drop=True)
    frame["n_N"] = [n_nitrogens(s) for s in frame["smiles"]]
    held = frame.iloc[400:]
    return frame.iloc[:400], held.loc[held["n_N"] > 0, "smiles"].head(30).tolist()


def _train(out, train: pd.DataFrame, kind: str, members: int) -> Predictor:
    from molprop.training.train import TrainRequest, run_train

    run_train(
        TrainRequest(
            data=train,
            smiles_column="smiles",
            target_columns=["n_N"],
            out=out,
            split_type="random",
            split_sizes=(0.9, 0.1, 0.0),
            model=dict(
                token_kind=kind, hidden_dim=32, heads=2, layers="MP", num_seeds=2, head_hidden=32
            ),
            train=TrainConfig(
                epochs=30,
                batch_size=32,
                lr=3e-3,
                ema_epochs=0,
                patience=1000,
                ensemble_size=members,
            ),
            progress=False,
        )
    )
    return Predictor.from_pretrained(out)


@pytest.fixture(scope="module")
def nitrogen_models(tmp_path_factory, nitrogen_data) -> dict[str, Predictor]:
    """An ESA ensemble of 2 and a single NSA model, 30 epochs on 400 molecules (~5 s each)."""
    train, _ = nitrogen_data
    root = tmp_path_factory.mktemp("nitrogen")
    return {
        "esa": _train(root / "esa", train, "esa", 2),
        "nsa": _train(root / "nsa", train, "nsa", 1),
    }


def nitrogen_share(e: Explanation) -> float:
    """Fraction of the positive attribution mass on N atoms (0 when there is none)."""
    positive = np.clip(np.asarray(e.weights), 0.0, None)
    on_n = np.array([el == "N" for el in e.elements])
    return float(positive[on_n].sum() / positive.sum()) if positive.sum() > 0 else 0.0


@pytest.mark.parametrize("kind", ["esa", "nsa"])
def test_nitrogen_count_attributions_sit_on_nitrogens(kind, nitrogen_models, nitrogen_data):
    predictor = nitrogen_models[kind]
    _, held = nitrogen_data
    predicted = predictor.predict(held)
    assert np.mean(np.abs(predicted["n_N"] - [n_nitrogens(s) for s in held])) < 0.4
    explanations = predictor.explain(held)
    assert all(e.ok for e in explanations)
    shares = [nitrogen_share(e) for e in explanations]
    assert np.mean(shares) >= 0.9, f"{kind}: mean N share {np.mean(shares):.3f}"
    for e, value in zip(explanations, predicted["n_N"], strict=True):
        assert e.n_members == len(predictor.members)
        assert e.value == pytest.approx(value, rel=1e-4, abs=1e-4)  # what predict says
        diff = e.prediction - e.baseline
        assert e.prediction == pytest.approx(e.value)  # regression: target units
        assert abs(sum(e.weights) - diff) <= RTOL * abs(diff), e  # completeness, 1 %
        assert abs(e.delta) <= RTOL * abs(diff) and e.complete


def test_baseline_is_the_model_with_zero_token_features(nitrogen_models) -> None:
    """The baseline is recomputed here without explain.py: each member run with its token
    features zeroed (a hook on the embedding layer's input), mean over members, target units."""
    predictor = nitrogen_models["esa"]
    smi = "CN1C=NC2=C1C(=O)N(C(=O)N2C)C"
    (e,) = predictor.explain(smi)
    batch = collate_graphs([predictor.featurizer.from_smiles(smi)])
    outs = []
    for member in predictor.members:
        handle = member.encoder.embed.register_forward_pre_hook(lambda m, a: (a[0] * 0,))
        try:
            with torch.no_grad():
                outs.append(float(member.eval()(batch)[0, 0]))
        finally:
            handle.remove()
    scaler = predictor.config.task.scaler
    expected = float(scaler.inverse(np.array([[np.mean(outs)]]))[0, 0])
    assert e.baseline == pytest.approx(expected, rel=1e-4, abs=1e-4)
    assert sum(e.weights) == pytest.approx(e.prediction - e.baseline, rel=RTOL)


def test_embedding_layer_also_completes(nitrogen_models, nitrogen_data) -> None:
    """layer="embedding" (zero token embeddings, bond tokens split half-half) also sums to
    prediction - baseline within 1 % (it needs more steps: LayerNorm at zero)."""
    _, held = nitrogen_data
    for e in nitrogen_models["nsa"].explain(held[:4], layer="embedding"):
        diff = e.prediction - e.baseline
        assert e.layer == "embedding" and abs(sum(e.weights) - diff) <= RTOL * abs(diff)


def test_bad_rows_are_per_row_errors_never_exceptions(nitrogen_models) -> None:
    predictor = nitrogen_models["nsa"]
    rows = ["C1CC", "", None, "CCN", "not a smiles", "C" * 30]
    out = predictor.explain(rows, max_heavy_atoms=20)  # type: ignore[arg-type]
    assert [e.status for e in out] == ["invalid_input"] * 3 + ["ok"] + ["invalid_input"] * 2
    assert all(e.error for e in out if not e.ok)
    assert "heavy atoms" in out[-1].error
    assert out[0].weights == () and out[0].value is None and out[0].svg() == ""
    atoms = atoms_frame(out)
    assert atoms["molecule"].unique().tolist() == [3] and len(atoms) == 3
    assert atoms["element"].tolist() == ["C", "C", "N"]
    mols = molecules_frame(out)
    assert mols["status"].tolist() == [e.status for e in out] and len(mols) == len(rows)


def test_explaining_never_touches_the_served_members(nitrogen_models, nitrogen_data) -> None:
    """explain hooks private copies: predictions in another thread meanwhile stay exact, and
    no hook is left on the predictor's members."""
    predictor = nitrogen_models["esa"]
    _, held = nitrogen_data
    reference = predictor.predict(held)["n_N"].to_numpy()
    done = threading.Event()
    seen: list[np.ndarray] = []

    def keep_predicting() -> None:
        while not done.is_set():
            seen.append(predictor.predict(held)["n_N"].to_numpy())

    worker = threading.Thread(target=keep_predicting)
    worker.start()
    try:
        predictor.explain(held[:10])
    finally:
        done.set()
        worker.join()
    assert seen
    for values in seen:
        np.testing.assert_allclose(values, reference, rtol=1e-6)
    for member in predictor.members:
        embed = member.encoder.embed
        assert not embed._forward_hooks and not embed._forward_pre_hooks


# --------------------------------------------------------------------------- shipped models


@pytest.mark.parametrize(
    "name",
    ["solubility", "lipophilicity", "hydration_free_energy", "bbb_penetration", "homo_lumo_gap"],
)
def test_shipped_models_explain(name: str) -> None:
    predictor = Predictor.from_pretrained(name)
    rows = ["CC(=O)Oc1ccccc1C(=O)O", "[Na+].[O-]C(=O)c1ccccc1", "C1CC", "[Na+].[Cl-]"]
    out = predictor.explain(rows)
    assert [e.status for e in out] == ["ok", "ok", "invalid_input", "unsupported"]
    # the salt is explained as the molecule prediction reads: benzoic acid, its atoms numbered
    assert [e.smiles for e in out[:2]] == [rows[0], "O=C(O)c1ccccc1"]
    predicted = predictor.predict(rows[:2])[predictor.target_names[0]].to_numpy()
    classifier = predictor.task_type == "classification"
    for e, value in zip(out, predicted):
        assert e.space == ("logit" if classifier else "target")
        assert e.value == pytest.approx(value, rel=1e-4, abs=1e-5)  # classifier: probability
        diff = e.prediction - e.baseline
        assert abs(sum(e.weights) - diff) <= RTOL * abs(diff) + 1e-4 and e.complete
        assert e.elements == tuple(a.GetSymbol() for a in Chem.MolFromSmiles(e.smiles).GetAtoms())
    svg, png = out[0].svg(), out[0].png()
    assert svg.startswith("<?xml") and "</svg>" in svg
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "</svg>" in Predictor.from_pretrained(name).explain("C")[0].svg()  # one atom: no map
