"""Structure files (extxyz, SDF, ...; :func:`molprop.chem.structures.read_structures`) as tables.

One row per record, in file order. A record's columns are its extxyz ``info`` keys / SDF
properties; its label is its ``smiles`` (or the chosen SMILES column) if it has one, else its
formula. A record that cannot be read or featurised is a per-row issue, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.chem.structures import Structure3D, read_structures
from molprop.graph import MolGraph
from molprop.io.table import MoleculeTable, RowIssue, load_molecule_table

#: The column through which ``load_structure_table`` hands each record to the featuriser.
_RECORD = "__record__"

Record = Structure3D | Exception


def structure_frame(records: Sequence[Record], label_key: str) -> tuple[pd.DataFrame, list[str]]:
    """-> (frame with ``record`` (0, 1, ...), ``label`` and every info key; the label of each
    record). A failed record keeps the ``info`` it carries (see ``read_structures``)."""
    labels, rows = [], []
    for i, r in enumerate(records):
        if isinstance(r, Exception):
            info = dict(getattr(r, "info", {}))
            labels.append(str(info.get(label_key, f"record {i}")))
            rows.append(info)
        else:
            labels.append(str(r.info[label_key]) if label_key in r.info else r.label())
            rows.append(dict(r.info))
    info = pd.DataFrame(rows)
    frame = pd.DataFrame({"record": np.arange(len(records)), "label": labels})
    frame = pd.concat([frame, info.drop(columns=["record", "label"], errors="ignore")], axis=1)
    return frame, labels


def load_structure_table(
    path: str | Path,
    label_column: str,
    target_columns: Sequence[str],
    featurize: Callable[[Structure3D], MolGraph],
    *,
    invalid: str = "skip",
    progress: bool = True,
) -> MoleculeTable:
    """Read, parse targets and featurise every record of a structure file (a table whose
    ``smiles`` are the record labels, ``label_column`` naming the info key to use as label).

    Targets are read from the records' info keys like table columns; an unreadable record, a
    bad target and a featurisation failure are :class:`RowIssue` s (``invalid`` as in
    :func:`load_molecule_table`)."""
    records = read_structures(path)
    frame, labels = structure_frame(records, label_column)
    for col in target_columns:
        if col not in frame.columns:
            frame[col] = ""  # no record has it: every row is reported without a target
    text = frame.copy()
    for col in target_columns:
        text[col] = ["" if pd.isna(v) else str(v) for v in frame[col].tolist()]
    text[_RECORD] = [f"{label} [record {i}]" for i, label in enumerate(labels)]

    def featurize_record(key: str) -> MolGraph:
        record = records[int(key.rsplit("[record ", 1)[1].rstrip("]"))]
        if isinstance(record, Exception):
            raise record
        return featurize(record)

    table = load_molecule_table(
        text, _RECORD, target_columns, featurize_record, invalid=invalid, progress=progress
    )
    table.smiles = [labels[r] for r in table.rows]
    table.invalid = [RowIssue(i.row, labels[i.row], i.reason) for i in table.invalid]
    table.frame = frame
    return table


__all__ = ["load_structure_table", "structure_frame"]
