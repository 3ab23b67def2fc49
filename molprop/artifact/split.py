"""The training split stored with a model: ``split.csv`` (``row``, ``smiles``, ``split``:
train / val / test, one line per valid row of the training table) and ``invalid_rows.csv`` (the
rows that could not be read). Written at training; read back by the card (the test part's
share in domain), the domain (its training molecules) and the recipes that recalibrate a model
on its own split. Shipped models do not ship them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from molprop.artifact.paths import INVALID_ROWS_NAME, SPLIT_NAME, artifact_file


def write_split(directory: str | Path, split: pd.DataFrame) -> Path:
    """Write ``split`` (columns ``row``, ``smiles``, ``split``) as the artifact's
    ``split.csv``."""
    path = Path(directory) / SPLIT_NAME
    split.to_csv(path, index=False)
    return path


def read_split(directory: str | Path) -> pd.DataFrame | None:
    """``split.csv`` of the artifact ``directory`` (``smiles`` and ``split`` read as text); None
    when it has none."""
    path = artifact_file(directory, SPLIT_NAME)
    if not path.exists():
        return None
    return pd.read_csv(path, dtype={"smiles": str, "split": str})


def write_invalid_rows(directory: str | Path, rows: pd.DataFrame) -> Path:
    """Write the training table's unreadable ``rows`` as the artifact's ``invalid_rows.csv``."""
    path = Path(directory) / INVALID_ROWS_NAME
    rows.to_csv(path, index=False)
    return path


def remove_invalid_rows(directory: str | Path) -> None:
    """Remove ``invalid_rows.csv`` (if any) from the artifact ``directory``."""
    artifact_file(directory, INVALID_ROWS_NAME).unlink(missing_ok=True)


__all__ = ["read_split", "remove_invalid_rows", "write_invalid_rows", "write_split"]
