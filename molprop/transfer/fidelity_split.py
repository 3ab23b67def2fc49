"""Split a two-fidelity table into a low-fidelity pretraining set and high-fidelity
train/validation/test sets, comparing molecules by standard InChIKey.

Modes:
    transductive: ``pretrain.csv`` holds every molecule with a low-fidelity label, the
        high-fidelity test molecules included (their low labels only).
    inductive: no molecule of the high-fidelity validation or test sets is in ``pretrain.csv``
        (by InChIKey, so a duplicate written as a different SMILES is caught), and the
        validation/test CSVs carry no low-fidelity column at all.

All rows that share an InChIKey go to the same high-fidelity part. :func:`check_split` proves
the mode's property and raises :class:`DataError` naming the offending molecules otherwise.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.chem.smiles import inchikey
from molprop.errors import ConfigError, DataError, InvalidInputError
from molprop.io.table import RowIssue, parse_target, read_table, require_columns
from molprop.transfer import MODES, Mode

log = logging.getLogger(__name__)

KEY_COLUMN = "inchikey"
PARTS = ("train", "val", "test")


@dataclass
class FidelitySplit:
    """The four tables and a JSON-able report. Each table has smiles, ``inchikey`` and its label
    column(s); train/val/test also carry the low column in transductive mode (train always)."""

    pretrain: pd.DataFrame
    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    report: dict = field(default_factory=dict)

    def write(self, out: str | Path) -> Path:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.pretrain.to_csv(out / "pretrain.csv", index=False)
        for part in PARTS:
            getattr(self, part).to_csv(out / f"{part}.csv", index=False)
        (out / "split_report.json").write_text(json.dumps(self.report, indent=2))
        return out


def resolve_sizes(sizes: Sequence[float], n: int) -> tuple[int, int, int]:
    """Counts (all >= 1 given) or fractions (all < 1) -> molecule counts; must fit in ``n``."""
    if len(sizes) != 3 or any(s < 0 for s in sizes):
        raise ConfigError(f"--high-sizes needs three non-negative numbers, got {list(sizes)}")
    if all(s < 1 for s in sizes):
        counts = [int(round(s * n)) for s in sizes]
    else:
        counts = [int(s) for s in sizes]
    if sum(counts) > n:
        raise ConfigError(
            f"high-fidelity sizes {counts} need {sum(counts)} molecules, only {n} "
            "have a high-fidelity label"
        )
    return counts[0], counts[1], counts[2]


def _labels(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column].tolist()
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        try:
            out[i] = parse_target(str(v) if not isinstance(v, float) else repr(v), column)
        except InvalidInputError:
            out[i] = np.nan
    return out


def check_split(split: FidelitySplit, mode: Mode) -> dict:
    """Raise :class:`DataError` if ``mode``'s guarantee does not hold; -> check summary."""
    pre = set(split.pretrain[KEY_COLUMN])
    held = set(split.val[KEY_COLUMN]) | set(split.test[KEY_COLUMN])
    parts = {p: set(getattr(split, p)[KEY_COLUMN]) for p in PARTS}
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = parts[a] & parts[b]
        if both:
            raise DataError(f"molecules in both {a} and {b}: {sorted(both)[:10]}")
    if mode == "inductive":
        leaked = sorted(pre & held)
        if leaked:
            raise DataError(
                f"inductive leak: {len(leaked)} validation/test molecule(s) are in the "
                f"pretraining set, e.g. InChIKeys {leaked[:10]}"
            )
        return {"leak_check": "passed", "heldout_in_pretrain": 0}
    high = parts["train"] | held
    missing = sorted(high - pre)
    # a high-fidelity molecule without any low label cannot be covered; everything else must be
    no_low = set(split.report.get("keys_without_low", []))
    uncovered = [k for k in missing if k not in no_low]
    if uncovered:
        raise DataError(
            f"transductive coverage: {len(uncovered)} high-fidelity molecule(s) with a "
            f"low label are missing from pretraining, e.g. {uncovered[:10]}"
        )
    return {
        "coverage_check": "passed",
        "high_molecules_in_pretrain": len(high & pre),
        "high_molecules_without_low_label": len(missing),
    }


def build_fidelity_split(
    data: str | Path | pd.DataFrame,
    smiles_column: str,
    low_column: str,
    high_column: str,
    high_sizes: Sequence[float],
    mode: Mode,
    seed: int = 0,
) -> FidelitySplit:
    """Build (and check) the split. The high-fidelity partition depends only on ``seed``, so
    both modes with one seed share their train/val/test molecules."""
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    origin = "" if isinstance(data, pd.DataFrame) else data
    require_columns(frame, [smiles_column, low_column, high_column], origin)
    low, high = _labels(frame, low_column), _labels(frame, high_column)
    keys: list[str | None] = []
    issues: list[RowIssue] = []
    for i, smi in enumerate(frame[smiles_column].tolist()):
        try:
            keys.append(inchikey(smi))
        except InvalidInputError as exc:
            keys.append(None)
            issues.append(RowIssue(i, str(smi), str(exc)))
    table = pd.DataFrame(
        {
            "smiles": frame[smiles_column].astype(str).values,
            KEY_COLUMN: keys,
            low_column: low,
            high_column: high,
        }
    )
    table = table[table[KEY_COLUMN].notna()].reset_index(drop=True)
    high_keys = sorted(set(table.loc[np.isfinite(table[high_column]), KEY_COLUMN]))
    n_train, n_val, n_test = resolve_sizes(high_sizes, len(high_keys))
    perm = np.random.default_rng(seed).permutation(len(high_keys))
    ordered = [high_keys[i] for i in perm]
    assign = {k: "train" for k in ordered[:n_train]}
    assign.update({k: "val" for k in ordered[n_train : n_train + n_val]})
    assign.update({k: "test" for k in ordered[n_train + n_val : n_train + n_val + n_test]})
    part = table[KEY_COLUMN].map(assign)
    has_low, has_high = np.isfinite(table[low_column]), np.isfinite(table[high_column])
    out: dict[str, pd.DataFrame] = {}
    for name in PARTS:
        cols = ["smiles", KEY_COLUMN, high_column]
        if mode == "transductive" or name == "train":
            cols.append(low_column)
        out[name] = table.loc[(part == name) & has_high, cols].reset_index(drop=True)
    pre_mask = has_low.copy()
    if mode == "inductive":
        pre_mask &= ~part.isin(["val", "test"])
    pretrain = table.loc[pre_mask, ["smiles", KEY_COLUMN, low_column]].reset_index(drop=True)
    keys_without_low = sorted(
        set(table.loc[part.notna(), KEY_COLUMN]) - set(table.loc[has_low, KEY_COLUMN])
    )
    report = {
        "mode": mode,
        "seed": seed,
        "smiles_column": smiles_column,
        "low_column": low_column,
        "high_column": high_column,
        "rows_in": len(frame),
        "rows_invalid": [i.describe() for i in issues],
        "unique_molecules": int(table[KEY_COLUMN].nunique()),
        "duplicate_rows": int(len(table) - table[KEY_COLUMN].nunique()),
        "high_sizes_requested": list(high_sizes),
        "molecules": {
            "train": n_train,
            "val": n_val,
            "test": n_test,
            "pretrain": int(pretrain[KEY_COLUMN].nunique()),
        },
        "rows": {
            "train": len(out["train"]),
            "val": len(out["val"]),
            "test": len(out["test"]),
            "pretrain": len(pretrain),
        },
        "keys_without_low": keys_without_low,
    }
    split = FidelitySplit(pretrain, out["train"], out["val"], out["test"], report)
    report["check"] = check_split(split, mode)
    log.info("fidelity split (%s, seed %d): %s", mode, seed, report["molecules"])
    return split
