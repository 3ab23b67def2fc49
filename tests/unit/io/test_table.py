from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from molprop.data import load_molecule_table
from molprop.errors import DataError
from molprop.featurize import Graph2DFeaturizer

F = Graph2DFeaturizer().from_smiles


def _frame():
    return pd.DataFrame(
        {
            "smiles": ["CCO", "not_a_smiles", "c1ccccc1", "", "CC(=O)O", "CCN"],
            "y1": ["1.0", "2.0", "", "3", "abc", ""],
            "y2": ["0.5", "1", "2", "3", "4", ""],
        }
    ).astype(str)


def test_invalid_rows_reported_with_row_smiles_and_reason():
    table = load_molecule_table(_frame(), "smiles", ["y1", "y2"], F, progress=False)
    assert table.rows.tolist() == [0, 2]  # row 2 has a blank y1 but a y2 label: kept
    reasons = {i.row: i.reason for i in table.invalid}
    assert set(reasons) == {1, 3, 4, 5}
    assert "RDKit" in reasons[1]
    assert "empty" in reasons[3]
    assert "'abc'" in reasons[4] and "y1" in reasons[4]
    assert "no target" in reasons[5]
    assert np.isnan(table.targets[1, 0]) and table.targets[1, 1] == 2.0
    issue = next(i for i in table.invalid if i.row == 1)
    assert "row 1" in issue.describe() and "not_a_smiles" in issue.describe()


def test_invalid_error_mode_raises_listing_rows():
    with pytest.raises(DataError) as err:
        load_molecule_table(_frame(), "smiles", ["y1"], F, invalid="error", progress=False)
    assert "row 1" in str(err.value) and "row 4" in str(err.value)


def test_missing_column_names_available_columns():
    with pytest.raises(DataError) as err:
        load_molecule_table(_frame(), "smiles", ["nope"], F, progress=False)
    assert "nope" in str(err.value) and "y1" in str(err.value)


def test_real_esol_all_valid(esol_frame):
    table = load_molecule_table(esol_frame.astype(str), "smiles", ["logp"], F, progress=False)
    assert len(table) == 1128 and not table.invalid
    assert table.targets.shape == (1128, 1)


def test_numeric_dataframe_columns_are_accepted():
    frame = pd.DataFrame({"smiles": ["CCO", None, "CCN"], "y": [1.5, 2.0, np.nan]})
    frame.loc[3] = ["CC", 4.0]
    table = load_molecule_table(frame, "smiles", ["y"], F, progress=False)
    assert table.rows.tolist() == [0, 3]
    assert table.targets[:, 0].tolist() == [1.5, 4.0]
    reasons = {i.row: i.reason for i in table.invalid}
    assert "empty" in reasons[1] and "no target" in reasons[2]
