"""A job's input rows, cut into chunks at submission: from JSON lists or an uploaded table.

The rows keep the input's columns as text, as ``molprop predict`` reads them
(:func:`molprop.io.readers.iter_chunks`): a job's result CSV has the same columns as
``molprop predict`` on the same file. A JSON job's table is ``id`` (when ids are given) and
``smiles``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from molprop.errors import DataError
from molprop.io.readers import input_format, iter_chunks, require_columns

#: the SMILES column of a job submitted as JSON lists
SMILES_COLUMN = "smiles"
#: the id column of a job submitted as JSON lists
ID_COLUMN = "id"


class TooManyRows(DataError):
    """More input rows than the service accepts in one job."""

    def __init__(self, rows: int, limit: int) -> None:
        super().__init__(
            f"the job has more than {limit} rows (at least {rows}); the limit is {limit} "
            "rows per job (MOLPROP_MAX_JOB_ROWS): split the input"
        )
        self.rows, self.limit = rows, limit


@dataclass(frozen=True)
class JobInput:
    """Rows of text fields under ``columns``, in input order, cut into chunks of at most the
    chunk size; ``smiles_column`` names the SMILES."""

    columns: list[str]
    smiles_column: str
    chunks: list[list[list[str]]]

    @property
    def rows_total(self) -> int:
        return sum(len(c) for c in self.chunks)

    @classmethod
    def from_lists(
        cls,
        smiles: Sequence[str],
        ids: Sequence[str] | None,
        chunk_rows: int,
        max_rows: int,
    ) -> JobInput:
        """``smiles`` (and ``ids``, one per SMILES) -> columns ``id``, ``smiles``."""
        if not smiles:
            raise DataError("the job has no SMILES")
        if len(smiles) > max_rows:
            raise TooManyRows(len(smiles), max_rows)
        if ids is not None and len(ids) != len(smiles):
            raise DataError(f"ids has {len(ids)} entries but smiles has {len(smiles)}")
        if ids is None:
            columns, rows = [SMILES_COLUMN], [[str(s)] for s in smiles]
        else:
            columns = [ID_COLUMN, SMILES_COLUMN]
            rows = [[str(i), str(s)] for i, s in zip(ids, smiles)]
        chunks = [rows[i : i + chunk_rows] for i in range(0, len(rows), chunk_rows)]
        return cls(columns, SMILES_COLUMN, chunks)

    @classmethod
    def from_table(
        cls,
        path: str | Path,
        smiles_column: str,
        required: Sequence[str],
        chunk_rows: int,
        max_rows: int,
    ) -> JobInput:
        """An uploaded CSV / TSV / SMI file (optionally gzipped) read as ``molprop predict``
        reads it: every line a row, a row with the wrong number of fields a
        :class:`DataError` naming its line, a missing column a :class:`DataError` listing the
        available ones (``required``: other columns that must be there, e.g. the caller's id
        column). More than ``max_rows`` rows: :class:`TooManyRows`."""
        if input_format(path) == "sdf":
            raise DataError(
                f"{Path(path).name} is an SDF file: jobs take CSV, TSV or SMI tables (a SMILES "
                "column); convert the SDF to CSV first, or predict it with `molprop predict "
                "--input FILE.sdf`, which reads SDF records"
            )
        columns: list[str] | None = None
        chunks: list[list[list[str]]] = []
        rows = 0
        for chunk in iter_chunks(path, smiles_column, chunk_rows):
            if columns is None:
                columns = [str(c) for c in chunk.frame.columns]
                require_columns(chunk.frame, [smiles_column, *required], "the upload")
            rows += len(chunk)
            if rows > max_rows:
                raise TooManyRows(rows, max_rows)
            if len(chunk):
                chunks.append(chunk.frame.astype(str).values.tolist())
        if columns is None or not chunks:
            raise DataError("the uploaded table has no rows")
        return cls(columns, smiles_column, chunks)


__all__ = ["ID_COLUMN", "SMILES_COLUMN", "JobInput", "TooManyRows"]
