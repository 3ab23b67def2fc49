"""benchmarks/finetune_shift: the two shifted "in-house assays" are what they claim — another
protocol's values for molecules the shipped model did not train on, nothing dropped silently."""

from __future__ import annotations

import numpy as np
import pandas as pd
from rdkit import Chem

from benchmarks.common import REPO
from benchmarks.finetune_shift import canonical, freesolv_calc, pcqm4mv2_gap
from molprop.pretrained_recipes import PRETRAINED, RECIPES, load_data


def test_freesolv_calc_is_the_test_split_with_calculated_values():
    table, info = freesolv_calc()
    split = pd.read_csv(PRETRAINED / "hydration_free_energy" / "split.csv")
    test = split[split["split"] == "test"]
    assert table["smiles"].tolist() == test["smiles"].tolist()
    full = pd.read_csv(REPO / "data" / "moleculenet" / "FreeSolv.csv.gz").set_index("smiles")
    np.testing.assert_array_equal(table["assay"], full.loc[table["smiles"], "calc"])
    # another protocol: not the experimental values the model was trained on
    expt = full.loc[table["smiles"], "expt"].to_numpy()
    assert (np.abs(table["assay"].to_numpy() - expt) > 0.1).mean() > 0.8
    assert info["rows"] == len(test)


def test_pcqm4mv2_gap_is_plain_smiles_unseen_by_the_model():
    table, info = pcqm4mv2_gap()
    assert info["rows"] == 1999
    assert len(table) == info["rows"] - info["unparsed"] - info["in_training_table"]
    assert not table["smiles"].str.contains(r"\s|\|", regex=True).any()  # no CXSMILES part
    assert all(Chem.MolFromSmiles(s) is not None for s in table["smiles"])
    trained = {canonical(s) for s in load_data(RECIPES["homo_lumo_gap"])["smiles"]}
    assert not set(table["smiles"]) & trained
    assert table["assay"].between(0.5, 20).all()  # eV, a HOMO-LUMO gap
