"""The Predictor keywords the service relies on: ``max_heavy_atoms``, ``max_smiles_length``,
``should_stop``; and the service's token count (``api.budget``) against the real featuriser."""

from __future__ import annotations

import pytest
from rdkit import Chem

from molprop.inference import Predictor
from tests.api.conftest import INVALID, VALID


@pytest.fixture(scope="module")
def predictor(model_dir) -> Predictor:
    return Predictor.from_pretrained(model_dir / "solubility")


def test_max_heavy_atoms_is_per_row_invalid(predictor: Predictor) -> None:
    out = predictor.predict(
        ["CCO", "C" * 21, "C" * 20, "[2H]C([2H])([2H])" + "C" * 19], max_heavy_atoms=20
    )
    assert out["status"].tolist() == ["ok", "invalid_input", "ok", "ok"]
    assert out["error"][1] == (
        "molecule has 21 heavy atoms; the limit is 20 per molecule (max_heavy_atoms)"
    )  # the service's wording (inference.screen.WorkLimits), naming the keyword
    assert out["logp"].isna().tolist() == [False, True, False, False]


def test_max_smiles_length_both_ways(predictor: Predictor) -> None:
    long = "C" * 1100
    assert predictor.predict([long])["status"].tolist() == ["invalid_input"]  # library default
    assert predictor.predict([long], max_smiles_length=1200)["status"].tolist() == ["ok"]
    out = predictor.predict(["C" * 30], max_smiles_length=20)
    assert out["status"].tolist() == ["invalid_input"] and "30 > 20" in out["error"][0]
    assert predictor.predict([long])["status"].tolist() == ["invalid_input"]  # not left raised


def test_should_stop_between_batches(predictor: Predictor, monkeypatch) -> None:
    """Polled before every member's pass over a batch: stops after exactly the passes allowed."""
    from molprop.errors import PredictionCancelled

    passes = []
    for m, member in enumerate(predictor.members):
        real = member.forward
        monkeypatch.setattr(
            member, "forward", lambda batch, m=m, real=real: passes.append(m) or real(batch)
        )
    polls = []

    def stop_after_three_passes() -> bool:
        polls.append(len(passes))
        return len(passes) >= 3

    smiles = VALID * 4  # 24 molecules, batch_size 4: 6 batches x 2 members
    assert len(predictor.members) == 2
    with pytest.raises(PredictionCancelled, match="batch 2 of 6"):
        predictor.predict(smiles, batch_size=4, should_stop=stop_after_three_passes)
    assert passes == [0, 1, 0]  # batch 1 both members, batch 2 the first: then stopped
    assert polls[: len(smiles)] == [0] * len(smiles)  # featurising: polled before every row
    passes.clear()
    full = predictor.predict(smiles, batch_size=4, should_stop=lambda: False)
    assert (full["status"] == "ok").all() and len(passes) == 12


def test_should_stop_while_featurising(predictor: Predictor) -> None:
    from molprop.errors import PredictionCancelled

    seen = []

    def stop_at_third() -> bool:
        seen.append(1)
        return len(seen) >= 3

    with pytest.raises(PredictionCancelled, match="featuris"):
        predictor.predict(VALID, should_stop=stop_at_third)
    assert len(seen) == 3


def test_service_token_count_matches_featuriser(predictor: Predictor) -> None:
    from api.budget import predictor_costs

    smiles = VALID + [
        "C" * 40,
        "c1ccc2ccccc2c1",
        "[NH4+].[Cl-]",
        "[2H]OC",
        "[H]OC([H])([H])C",
        "C[C@H](N)C(=O)O",
        "[Na+].[Cl-]",
        "C",
        "CCO.O.[Na+]",
        ".".join(["C"] * 200),
    ]
    costs = predictor_costs(smiles, predictor)
    for smi, cost in zip(smiles, costs):
        graph = predictor.featurizer.from_smiles(smi)
        heavy = sum(a.GetAtomicNum() > 1 for a in Chem.MolFromSmiles(smi).GetAtoms())
        bonded = set(graph.edge_index.ravel().tolist())
        lonely = sum(1 for atom in range(graph.n_nodes) if atom not in bonded)
        assert cost.heavy_atoms == heavy, smi
        # ESA: one token per directed bond, one self-loop token per atom without a bond
        assert cost.tokens == graph.n_edges + lonely, smi
        assert cost.work == cost.tokens and cost.conformer_atoms == 0, smi  # 2D: no conformer
    # unparsable: 1 token (the featuriser refuses them before any model work); a pentavalent
    # carbon parses unsanitised, so its 5 bonds count
    assert [c.tokens for c in predictor_costs(INVALID, predictor)] == [1, 1, 1, 10]


def test_disconnected_atoms_cost_one_token_each() -> None:
    """200 unbonded carbons are 200 self-loop tokens for the model, not 1."""
    from api.budget import molecule_costs

    dots = ".".join(["C"] * 200)
    assert molecule_costs([dots])[0].tokens == 200
    assert molecule_costs([dots], "nsa")[0].tokens == 200
    assert molecule_costs(["[Na+].[Cl-]", "C"])[0].tokens == 2


def test_streaming_loop_stops_between_batches_of_a_chunk(predictor: Predictor) -> None:
    """The loop under ``molprop predict`` and jobs asks ``should_stop`` before every model batch
    too (not only per chunk): a stop during the model's passes drops the chunk unwritten."""
    import pandas as pd

    from molprop.errors import PredictionCancelled
    from molprop.inference.streaming import predict_chunks
    from molprop.io.readers import InputChunk

    chunk = InputChunk(0, pd.DataFrame({"smiles": VALID * 4}))  # 24 rows: 6 batches of 4
    polls: list[int] = []

    def stop_in_the_model() -> bool:
        # polled as the chunk is read, before each of its 24 rows is featurised, before it is
        # predicted, then before each member's pass (2 members): stop at batch 2
        polls.append(1)
        return len(polls) > 1 + 24 + 1 + 2

    written: list[int] = []
    with pytest.raises(PredictionCancelled, match="batch 2 of 6"):
        predict_chunks(
            predictor,
            [chunk],
            "smiles",
            lambda c, out: written.append(len(out)),
            batch_size=4,
            should_stop=stop_in_the_model,
        )
    assert written == []
