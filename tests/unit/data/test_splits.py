from __future__ import annotations

import numpy as np
import pytest

from molprop.data.splits import column_split, make_split, murcko_scaffold
from molprop.errors import ConfigError, DataError


def _check_partition(split, n):
    allidx = np.concatenate([split.train, split.val, split.test])
    assert sorted(allidx.tolist()) == list(range(n))


def test_random_split_sizes_and_seed(esol_frame):
    smiles = esol_frame.smiles.tolist()
    a = make_split("random", smiles, (0.8, 0.1, 0.1), seed=1)
    b = make_split("random", smiles, (0.8, 0.1, 0.1), seed=1)
    c = make_split("random", smiles, (0.8, 0.1, 0.1), seed=2)
    _check_partition(a, len(smiles))
    assert np.array_equal(a.test, b.test) and not np.array_equal(a.test, c.test)
    assert abs(len(a.train) - 0.8 * len(smiles)) <= 1


def test_scaffold_split_no_scaffold_shared(esol_frame):
    smiles = esol_frame.smiles.tolist()
    split = make_split("scaffold", smiles, (0.8, 0.1, 0.1), seed=0)
    _check_partition(split, len(smiles))
    scaf = [murcko_scaffold(s) for s in smiles]
    parts = [{scaf[i] for i in idx} for idx in (split.train, split.val, split.test)]
    assert not (parts[0] & parts[1]) and not (parts[0] & parts[2]) and not (parts[1] & parts[2])
    assert 0.75 * len(smiles) <= len(split.train) <= 0.81 * len(smiles)
    other = make_split("scaffold", smiles, (0.8, 0.1, 0.1), seed=1)
    assert not np.array_equal(np.sort(split.test), np.sort(other.test))


def test_column_split_and_errors():
    split = column_split(["train", "VAL", "test", "validation", "train"])
    assert split.train.tolist() == [0, 4] and split.val.tolist() == [1, 3]
    with pytest.raises(DataError):
        column_split(["train", "holdout"])
    with pytest.raises(ConfigError):
        make_split("random", ["C"] * 10, (0.5, 0.2, 0.2), 0)
