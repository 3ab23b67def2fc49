"""benchmarks/finetune_assay: the held-out "assay" is exactly the shipped model's test split, cut
into scaffold-disjoint halves (no scaffold on both sides, nothing dropped or duplicated)."""

from __future__ import annotations

import pandas as pd

from benchmarks.finetune_assay import assay_halves
from molprop.data.splits import murcko_scaffold
from molprop.pretrained_recipes import PRETRAINED


def test_halves_are_the_test_split_scaffold_disjoint():
    split = pd.read_csv(PRETRAINED / "solubility" / "split.csv")
    test_smiles = sorted(split.loc[split["split"] == "test", "smiles"])
    fine, evaluation = assay_halves("solubility", seed=0)
    assert sorted([*fine["smiles"], *evaluation["smiles"]]) == test_smiles
    assert abs(len(fine) - len(evaluation)) <= 0.2 * len(test_smiles)
    a = {murcko_scaffold(s) for s in fine["smiles"]}
    b = {murcko_scaffold(s) for s in evaluation["smiles"]}
    assert not a & b
    other, _ = assay_halves("solubility", seed=1)
    assert set(other["smiles"]) != set(fine["smiles"])  # the seed draws other halves
