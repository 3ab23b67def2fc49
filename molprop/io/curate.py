"""Curation of labelled molecule tables: standardise, key by InChIKey, merge duplicates.

The rules (the same for every endpoint, stated once here):

1. **Standardise** each SMILES with RDKit: cleanup + largest-fragment parent
   (:func:`molprop.chem.smiles.parse_smiles` with ``standardize=True``), then neutralise
   (``rdMolStandardize.Uncharger``), then RDKit canonical SMILES. A row whose SMILES does not
   parse, has a wildcard atom (``*``) or no InChIKey is removed.
2. **Label**: a missing or non-finite label removes the row; so does a label outside the
   endpoint's plausible range (``low``/``high``), and for classification any label other than
   0 / 1.
3. **Deduplicate by standard InChIKey.** Regression: when the spread (max − min) of a
   molecule's labels is at most ``tolerance`` the labels are averaged into one row, otherwise
   every row of that molecule is dropped. Classification: identical labels collapse to one
   row; disagreeing labels drop every row of that molecule.

Every removed row is kept in the ``removed`` table with its source row number, raw SMILES,
raw label and the reason, so nothing disappears silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd
from rdkit import Chem
from rdkit.Chem.MolStandardize import rdMolStandardize

from molprop.chem.smiles import parse_smiles
from molprop.errors import InvalidInputError

TaskType = Literal["regression", "classification"]

#: columns of the removed-rows table
REMOVED_COLUMNS = ["row", "smiles_raw", "label_raw", "inchikey", "reason"]


@dataclass(frozen=True)
class CurationRule:
    """How one endpoint's labels are checked and merged.

    Attributes:
        task: ``"regression"`` or ``"classification"`` (labels 0 / 1).
        tolerance: regression only: duplicates whose labels spread by at most this much
            (max − min, label units) are averaged; a wider spread drops the molecule.
        low, high: plausible label range (inclusive); labels outside are removed.
    """

    task: TaskType
    tolerance: float = 0.0
    low: float = -math.inf
    high: float = math.inf


@dataclass(frozen=True)
class Curated:
    """The result of :func:`curate`: the kept table and every removed row with its reason.

    ``table`` has columns ``smiles`` (canonical, standardised), ``inchikey``, the label column
    and ``n_measurements`` (rows merged into the kept one); ``removed`` has
    :data:`REMOVED_COLUMNS`.
    """

    table: pd.DataFrame
    removed: pd.DataFrame
    n_in: int


_UNCHARGER = rdMolStandardize.Uncharger()


def standardise(smiles: object) -> tuple[str, str]:
    """Standardised canonical SMILES and standard InChIKey of ``smiles``.

    Raises:
        InvalidInputError: unparsable SMILES, wildcard atoms, or no InChIKey; the message says why.
    """
    mol = parse_smiles(smiles, standardize=True)
    if any(atom.GetAtomicNum() == 0 for atom in mol.GetAtoms()):
        raise InvalidInputError("wildcard atom (*) in the structure")
    try:
        mol = _UNCHARGER.uncharge(mol)
    except Exception as exc:  # RDKit raises several exception types
        raise InvalidInputError(f"neutralisation failed: {exc}") from exc
    key = Chem.MolToInchiKey(mol)
    if not key:
        raise InvalidInputError("InChIKey could not be computed")
    return Chem.MolToSmiles(mol), key


def _label_problem(value: object, rule: CurationRule) -> str | None:
    """Why ``value`` is not a usable label (``None`` when it is)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"label {value!r} is not a number"
    if not math.isfinite(number):
        return "missing label" if number != number else f"label {number} is not finite"
    if rule.task == "classification" and number not in (0.0, 1.0):
        return f"classification label {number:g} is not 0 or 1"
    if not rule.low <= number <= rule.high:
        return f"label {number:g} outside the plausible range [{rule.low:g}, {rule.high:g}]"
    return None


def curate(
    smiles: pd.Series,
    labels: pd.Series,
    label_name: str,
    rule: CurationRule,
    cache: dict[str, tuple[str, str] | str] | None = None,
) -> Curated:
    """Apply the module's rules to one endpoint's raw ``smiles`` and ``labels``.

    Rows keep their order of first appearance (deterministic); ``row`` in ``removed`` is the
    0-based position in the input. ``cache`` (raw SMILES -> :func:`standardise` result or the
    reason it failed) may be shared between calls on tables that share molecules.
    """
    if len(smiles) != len(labels):
        raise ValueError(f"{len(smiles)} SMILES but {len(labels)} labels")
    removed: list[dict[str, object]] = []
    good: list[tuple[int, str, str, float]] = []
    cache = {} if cache is None else cache
    for row, (raw, value) in enumerate(zip(smiles.tolist(), labels.tolist(), strict=True)):
        problem = _label_problem(value, rule)
        if problem is not None:
            removed.append(_removed(row, raw, value, "", problem))
            continue
        key = raw if isinstance(raw, str) else repr(raw)
        if key not in cache:
            try:
                cache[key] = standardise(raw)
            except InvalidInputError as exc:
                cache[key] = f"invalid SMILES: {exc}"
        result = cache[key]
        if isinstance(result, str):
            removed.append(_removed(row, raw, value, "", result))
            continue
        canonical, inchikey = result
        good.append((row, canonical, inchikey, float(value)))

    groups: dict[str, list[tuple[int, str, str, float]]] = {}
    for item in good:
        groups.setdefault(item[2], []).append(item)
    kept: list[dict[str, object]] = []
    for inchikey, items in groups.items():
        values = [v for *_, v in items]
        first_row, canonical = items[0][0], items[0][1]
        spread = max(values) - min(values)
        if rule.task == "classification" and spread > 0:
            reason = f"conflicting duplicate: labels disagree ({len(items)} rows)"
            removed.extend(_removed(r, smiles.iloc[r], v, k, reason) for r, _, k, v in items)
            continue
        if rule.task == "regression" and spread > rule.tolerance:
            reason = (
                f"conflicting duplicate: spread {spread:.4g} > tolerance {rule.tolerance:g} "
                f"({len(items)} rows)"
            )
            removed.extend(_removed(r, smiles.iloc[r], v, k, reason) for r, _, k, v in items)
            continue
        label = sum(values) / len(values)
        for r, _, k, v in items[1:]:
            reason = (
                f"duplicate of row {first_row} merged (mean of {len(items)})"
                if rule.task == "regression"
                else f"duplicate of row {first_row} (same label)"
            )
            removed.append(_removed(r, smiles.iloc[r], v, k, reason))
        kept.append(
            {
                "_row": first_row,
                "smiles": canonical,
                "inchikey": inchikey,
                label_name: int(label) if rule.task == "classification" else label,
                "n_measurements": len(items),
            }
        )
    table = pd.DataFrame(kept, columns=["_row", "smiles", "inchikey", label_name, "n_measurements"])
    table = table.sort_values("_row", kind="stable").drop(columns="_row").reset_index(drop=True)
    removed_frame = pd.DataFrame(removed, columns=REMOVED_COLUMNS)
    removed_frame = removed_frame.sort_values("row", kind="stable").reset_index(drop=True)
    return Curated(table=table, removed=removed_frame, n_in=len(smiles))


def _removed(row: int, raw: object, value: object, inchikey: str, reason: str) -> dict[str, object]:
    return {
        "row": row,
        "smiles_raw": raw,
        "label_raw": value,
        "inchikey": inchikey,
        "reason": reason,
    }
