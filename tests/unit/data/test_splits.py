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


def test_scaffold_folds_group_scaffolds_and_balance(esol_frame):
    from molprop.data.splits import scaffold_folds

    smiles = esol_frame["smiles"].tolist()
    fold = scaffold_folds(smiles, 5, seed=0)
    assert set(fold.tolist()) == set(range(5))
    scaffold_fold: dict[str, int] = {}
    for smi, k in zip(smiles, fold):
        assert scaffold_fold.setdefault(murcko_scaffold(smi), int(k)) == k  # one fold each
    # without the two sets larger than a fold (acyclic 317, benzene 254) the folds balance
    small = [s for s in smiles if murcko_scaffold(s) not in ("", "c1ccccc1")]
    counts = np.bincount(scaffold_folds(small, 5, seed=0))
    assert counts.max() - counts.min() <= 0.1 * len(small) / 5, counts
    assert not np.array_equal(fold, scaffold_folds(smiles, 5, seed=1))
    with pytest.raises(ConfigError):
        scaffold_folds(smiles, 1, 0)


def test_scaffold_holdout_keeps_big_sets_in_train(esol_frame):
    from molprop.data.splits import scaffold_holdout

    smiles = esol_frame["smiles"].tolist()
    train, held = scaffold_holdout(smiles, 1 / 9, seed=0)
    assert sorted(np.concatenate([train, held]).tolist()) == list(range(len(smiles)))
    assert abs(len(held) - len(smiles) / 9) <= 0.1 * len(smiles) / 9
    held_scaffolds = {murcko_scaffold(smiles[i]) for i in held}
    assert not held_scaffolds & {murcko_scaffold(smiles[i]) for i in train}
    assert "" not in held_scaffolds and "c1ccccc1" not in held_scaffolds  # big sets: train
