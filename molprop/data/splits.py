"""Train/validation/test splits: random, balanced Bemis–Murcko scaffold, or a user column."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from rdkit import Chem
from rdkit.Chem.Scaffolds import MurckoScaffold

from molprop.errors import ConfigError, DataError

SPLIT_NAMES = ("train", "val", "test")
#: how a table is split (:func:`make_split`)
SplitType = Literal["random", "scaffold", "column"]


@dataclass(frozen=True)
class Split:
    """Indices (into a :class:`MoleculeTable`) of each part."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def labels(self, n: int) -> np.ndarray:
        out = np.full(n, "", dtype=object)
        out[self.train], out[self.val], out[self.test] = "train", "val", "test"
        return out


def _check_sizes(sizes: Sequence[float]) -> tuple[float, float, float]:
    if len(sizes) != 3 or any(s < 0 for s in sizes) or abs(sum(sizes) - 1.0) > 1e-6:
        raise ConfigError(
            f"split sizes must be three non-negative numbers summing to 1, got {sizes}"
        )
    return float(sizes[0]), float(sizes[1]), float(sizes[2])


def random_split(n: int, sizes: Sequence[float], seed: int) -> Split:
    f_train, f_val, _ = _check_sizes(sizes)
    perm = np.random.default_rng(seed).permutation(n)
    n_train, n_val = int(round(f_train * n)), int(round(f_val * n))
    return Split(perm[:n_train], perm[n_train : n_train + n_val], perm[n_train + n_val :])


def murcko_scaffold(smiles: str) -> str:
    """Bemis–Murcko scaffold SMILES (chirality kept); acyclic molecules share the '' scaffold."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return smiles
    return MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=True)


def scaffold_groups(smiles: Sequence[str]) -> list[list[int]]:
    """Indices of the molecules sharing each Bemis–Murcko scaffold (in first-seen order)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, smi in enumerate(smiles):
        groups[murcko_scaffold(smi)].append(i)
    return list(groups.values())


def scaffold_folds(smiles: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """Fold index (0..folds-1) per molecule for scaffold-grouped K-fold cross-validation: no
    scaffold is in two folds. Balanced as :func:`scaffold_split`: scaffold sets larger than half
    a fold go first (shuffled with ``seed``), then the rest (shuffled); each set joins the fold
    with the fewest molecules so far (ties: the lowest index)."""
    if folds < 2:
        raise ConfigError(f"cross-validation needs at least 2 folds, got {folds}")
    if len(smiles) < folds:
        raise DataError(f"{len(smiles)} molecules cannot fill {folds} folds")
    half_fold = len(smiles) / folds / 2
    sets = scaffold_groups(smiles)
    big = [s for s in sets if len(s) > half_fold]
    small = [s for s in sets if len(s) <= half_fold]
    rng = np.random.default_rng(seed)
    rng.shuffle(big)
    rng.shuffle(small)
    out = np.full(len(smiles), -1, dtype=int)
    sizes = np.zeros(folds, dtype=int)
    for group in big + small:
        k = int(np.argmin(sizes))
        out[group] = k
        sizes[k] += len(group)
    return out


def scaffold_holdout(
    smiles: Sequence[str], fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out) indices, about ``fraction`` held out, no scaffold in both: the
    balanced scaffold split of :func:`scaffold_split` with no test part (scaffold sets larger
    than half the held-out size go to train first; the rest, shuffled with ``seed``, fill train,
    then the held-out part; a set that fits neither joins train)."""
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"held-out fraction must be in (0, 1), got {fraction}")
    n_val = fraction * len(smiles)
    n_train = len(smiles) - n_val
    sets = scaffold_groups(smiles)
    big = [s for s in sets if len(s) > n_val / 2]
    small = [s for s in sets if len(s) <= n_val / 2]
    rng = np.random.default_rng(seed)
    rng.shuffle(big)
    rng.shuffle(small)
    train: list[int] = []
    held: list[int] = []
    for group in big + small:
        if len(train) + len(group) <= n_train or len(held) + len(group) > n_val:
            train += group
        else:
            held += group
    return np.asarray(train, int), np.asarray(held, int)


def scaffold_split(smiles: Sequence[str], sizes: Sequence[float], seed: int) -> Split:
    """Balanced scaffold split (as chemprop): scaffold sets larger than half the test size go to
    train first; the rest are shuffled with ``seed`` and filled into train, val, test in turn.
    No scaffold appears in two parts.
    """
    f_train, f_val, _ = _check_sizes(sizes)
    n = len(smiles)
    n_train, n_val = f_train * n, f_val * n
    n_test = n - n_train - n_val
    sets = scaffold_groups(smiles)
    big = [s for s in sets if len(s) > n_val / 2 or len(s) > n_test / 2]
    small = [s for s in sets if not (len(s) > n_val / 2 or len(s) > n_test / 2)]
    rng = np.random.default_rng(seed)
    rng.shuffle(big)
    rng.shuffle(small)
    train: list[int] = []
    val: list[int] = []
    test: list[int] = []
    for group in big + small:
        if len(train) + len(group) <= n_train:
            train += group
        elif len(val) + len(group) <= n_val:
            val += group
        else:
            test += group
    return Split(np.asarray(train, int), np.asarray(val, int), np.asarray(test, int))


def column_split(values: Sequence[str]) -> Split:
    """Split from a user column whose values are train / val / test (case-insensitive)."""
    labels = np.asarray([str(v).strip().lower() for v in values])
    aliases = {"valid": "val", "validation": "val", "dev": "val"}
    labels = np.asarray([aliases.get(v, v) for v in labels])
    bad = sorted(set(labels) - set(SPLIT_NAMES))
    if bad:
        raise DataError(f"split column has values {bad}; expected train/val/test")
    return Split(*(np.flatnonzero(labels == name) for name in SPLIT_NAMES))


def make_split(
    split_type: str,
    smiles: Sequence[str],
    sizes: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    column_values: Sequence[str] | None = None,
) -> Split:
    if split_type == "random":
        return random_split(len(smiles), sizes, seed)
    if split_type == "scaffold":
        return scaffold_split(smiles, sizes, seed)
    if split_type == "column":
        if column_values is None:
            raise ConfigError("split type 'column' needs --split-column")
        return column_split(column_values)
    raise ConfigError(f"unknown split type {split_type!r}; choose random, scaffold or column")
