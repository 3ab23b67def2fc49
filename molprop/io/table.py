"""Reading molecule tables (CSV) into featurised records with per-row error reports.

Nothing is dropped silently: every row that cannot be used appears in ``invalid`` with its row
number, its SMILES and the reason; a blank line is such a row (an empty SMILES).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from molprop.errors import DataError, InvalidInputError
from molprop.graph import MolGraph
from molprop.io.readers import csv_frames, csv_separator, require_columns

log = logging.getLogger(__name__)

#: what reading a table does with an unusable row: report it and go on, or raise
InvalidPolicy = Literal["skip", "error"]


@dataclass(frozen=True)
class RowIssue:
    """One unusable input row. ``row`` is the 0-based data row (the file line is row + 2)."""

    row: int
    smiles: str
    reason: str

    def describe(self) -> str:
        return f"row {self.row} (line {self.row + 2}) SMILES {self.smiles!r}: {self.reason}"


@dataclass
class MoleculeTable:
    """Valid, featurised rows of a table, with the rows that were rejected.

    Shapes:
        graphs: n valid graphs.
        targets: (n, n_targets) float64, NaN where a label is missing.
        rows: (n,) int, the 0-based row of each valid record in the source table.
    """

    smiles: list[str]
    graphs: list[MolGraph]
    targets: np.ndarray
    rows: np.ndarray
    target_names: list[str]
    invalid: list[RowIssue] = field(default_factory=list)
    frame: pd.DataFrame | None = None

    def __len__(self) -> int:
        return len(self.graphs)

    def subset(self, idx: np.ndarray) -> MoleculeTable:
        idx = np.asarray(idx, dtype=np.int64)
        return MoleculeTable(
            smiles=[self.smiles[i] for i in idx],
            graphs=[self.graphs[i] for i in idx],
            targets=self.targets[idx],
            rows=self.rows[idx],
            target_names=list(self.target_names),
            invalid=[],
            frame=self.frame,
        )

    def invalid_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [(i.row, i.smiles, i.reason) for i in self.invalid], columns=["row", "smiles", "reason"]
        )


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a whole CSV / TSV (``.gz``, ``.bz2``, ``.xz`` too; ``.smi`` as tab-separated with a
    header), every column as text.

    Same parser as streaming prediction (:func:`molprop.io.readers.csv_frames`): every line
    after the header is a row, so data row i is file line i + 2 (quoted line breaks aside). A
    blank line is a row of empty fields (an empty SMILES, reported per row by
    :func:`load_molecule_table`), never dropped; a row whose field count differs from the
    header's is a :class:`DataError` naming its line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    sep = "\t" if path.suffix.lower() == ".smi" else csv_separator(path)
    frames = list(csv_frames(path, sep=sep))
    if not frames:
        raise DataError(f"could not read {path}: the file is empty (no header line)")
    return frames[0]


def parse_target(value: object, column: str) -> float:
    """Blank / NaN / None -> NaN (missing label); otherwise a float or an InvalidInputError.

    Accepts text (as read from a file) and numbers (a DataFrame from ``pd.read_csv``)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return float("nan")
    text = str(value).strip()
    if text == "" or text.lower() in {"nan", "na", "n/a", "none", "null"}:
        return float("nan")
    try:
        out = float(text)
    except ValueError:
        raise InvalidInputError(f"target {column!r} value {text!r} is not a number") from None
    if not np.isfinite(out):
        raise InvalidInputError(f"target {column!r} value {text!r} is not finite")
    return out


_Row = TypeVar("_Row")
_Item = TypeVar("_Item")


def featurize_rows(
    smiles: Sequence[_Row],
    featurize: Callable[[_Row], _Item],
    *,
    progress: bool = False,
) -> list[_Item | Exception]:
    """Featurise each SMILES; failures are returned in place (never raised, never dropped):
    the :class:`~molprop.errors.InvalidInputError` raised, or a ``RuntimeError`` naming an
    unexpected exception."""
    out: list[_Item | Exception] = []
    for smi in tqdm(smiles, desc="featurising", disable=not progress, leave=False):
        try:
            out.append(featurize(smi))
        except InvalidInputError as exc:
            out.append(exc)
        except Exception as exc:  # unexpected: reported as an error row, not a crash
            out.append(RuntimeError(f"{type(exc).__name__}: {exc}"))
    return out


def load_molecule_table(
    path_or_frame: str | Path | pd.DataFrame,
    smiles_column: str,
    target_columns: Sequence[str],
    featurize: Callable[[str], MolGraph],
    *,
    invalid: str = "skip",
    require_targets: bool = True,
    progress: bool = True,
) -> MoleculeTable:
    """Read, parse targets and featurise a table.

    Args:
        invalid: ``"skip"`` reports bad rows and continues; ``"error"`` raises on the first
            report with all bad rows listed.
        require_targets: rows whose targets are all missing are reported as invalid.
    """
    if invalid not in {"skip", "error"}:
        raise DataError(f"--invalid must be 'skip' or 'error', got {invalid!r}")
    frame = path_or_frame if isinstance(path_or_frame, pd.DataFrame) else read_table(path_or_frame)
    require_columns(frame, [smiles_column, *target_columns], path_or_frame)
    if len(frame) == 0:
        raise DataError("the table has no rows")
    issues: list[RowIssue] = []
    targets = np.full((len(frame), len(target_columns)), np.nan)
    target_ok = np.ones(len(frame), dtype=bool)
    for j, col in enumerate(target_columns):
        for i, value in enumerate(frame[col].tolist()):
            try:
                targets[i, j] = parse_target(value, col)
            except InvalidInputError as exc:
                if target_ok[i]:
                    issues.append(RowIssue(i, str(frame[smiles_column].iloc[i]), str(exc)))
                target_ok[i] = False
    smiles = [
        s if isinstance(s, str) else ("" if pd.isna(s) else str(s))
        for s in frame[smiles_column].tolist()
    ]
    graphs = featurize_rows(smiles, featurize, progress=progress)
    keep: list[int] = []
    for i, g in enumerate(graphs):
        if not target_ok[i]:
            continue
        if isinstance(g, Exception):
            issues.append(RowIssue(i, smiles[i], str(g)))
        elif require_targets and target_columns and np.all(np.isnan(targets[i])):
            issues.append(RowIssue(i, smiles[i], "no target value (all target columns blank)"))
        else:
            keep.append(i)
    issues.sort(key=lambda r: r.row)
    for issue in issues:
        log.warning("invalid input: %s", issue.describe())
    if issues and invalid == "error":
        listing = "\n".join(i.describe() for i in issues[:20])
        more = f"\n... and {len(issues) - 20} more" if len(issues) > 20 else ""
        raise DataError(
            f"{len(issues)} invalid row(s) (use --invalid skip to continue):\n{listing}{more}"
        )
    if not keep:
        raise DataError(f"no valid rows in the table ({len(issues)} invalid)")
    idx = np.asarray(keep, dtype=np.int64)
    return MoleculeTable(
        smiles=[smiles[i] for i in idx],
        graphs=[graphs[i] for i in idx],
        targets=targets[idx],
        rows=idx,
        target_names=list(target_columns),
        invalid=issues,
        frame=frame,
    )
