"""Input files read in chunks: CSV / TSV (optionally gzipped), SMI and SDF.

Every input record is a row, in file order, so output row i can always be input row i:

* CSV / TSV: every line after the header is a row, blank lines included (a blank line is a row
  whose fields are all empty, e.g. an empty SMILES reported as ``invalid_input``). A row with
  more or fewer fields than the header (e.g. a trailing separator that would shift the
  columns) is a :class:`DataError` naming the line. Not pandas: it silently skips blank lines
  and, when the first data row has one field more than the header (a trailing comma), takes the
  first column as the index, shifting every column by one. :func:`molprop.io.table.read_table`
  reads whole tables with the same parser.
* SMI: ``SMILES [name]`` per line; every line is a row, blank lines included.
* SDF: one row per record (parsed in :func:`molprop.chem.structures.iter_sdf_records`) as
  SMILES + ``name`` + the record's properties; a record RDKit cannot read is a row whose
  failure :class:`InputChunk` carries.
"""

from __future__ import annotations

import csv
import io
import lzma
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from molprop.chem.structures import iter_sdf_records, open_binary
from molprop.errors import DataError
from molprop.graph import MolGraph

#: One featurised input row, or the reason it could not be featurised.
Item = MolGraph | Exception


@dataclass(frozen=True)
class InputChunk:
    """Consecutive input rows ``start .. start + len(frame) - 1`` (0-based data rows).

    ``frame`` holds the input columns as text; ``failures`` maps a row offset within the chunk
    to the reason the reader could not produce a SMILES for it (e.g. an unparsable SDF record).
    """

    start: int
    frame: pd.DataFrame
    failures: dict[int, Exception] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.frame)

    def smiles(self, column: str) -> list[str]:
        return [str(s) for s in self.frame[column].tolist()]

    def with_failures(self, items: list[Item]) -> list[Item]:
        """``items`` (one per row) with the reader's failures put in place of their rows."""
        for i, exc in self.failures.items():
            items[i] = exc
        return items


def input_format(path: str | Path) -> str:
    """``csv`` (also .tsv), ``smi`` or ``sdf`` from the file name (a ``.gz`` suffix is allowed)."""
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".sdf", ".sd", ".mol")):
        return "sdf"
    if name.endswith(".smi"):
        return "smi"
    return "csv"


#: the first bytes of files that are no text table: a zip archive (``.xlsx``, ``.ods``, ...)
#: and an OLE compound file (``.xls``)
SPREADSHEET_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")


def check_not_spreadsheet(path: Path) -> None:
    """A :class:`DataError` saying how to save a spreadsheet (an Excel or LibreOffice file, or
    any zip archive) as CSV, where ``path`` is one: read as text it would fail on its first
    binary byte with a message about UTF-8 that does not say what to do."""
    with open_binary(path) as fh:
        head = fh.read(8)
    if head.startswith(SPREADSHEET_MAGIC):
        raise DataError(
            f"{path} is a spreadsheet or zip archive, not a text table: molprop reads CSV, "
            "TSV, SMILES (.smi) and SDF files (optionally .gz, .bz2 or .xz); save the sheet as "
            "CSV (in Excel: File > Save As > CSV UTF-8) and give that file"
        )


def open_text(path: Path) -> io.TextIOBase:
    """Text, UTF-8 (a byte-order mark is dropped), newlines as written (for ``csv``); ``.gz``,
    ``.bz2`` and ``.xz`` files are decompressed; a spreadsheet is a :class:`DataError`
    (:func:`check_not_spreadsheet`)."""
    check_not_spreadsheet(path)
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


#: what reading a damaged or non-text input file raises (a truncated or corrupt ``.gz`` /
#: ``.bz2`` / ``.xz``, bytes that are not UTF-8): :func:`iter_chunks` and :func:`count_records`
#: turn them into a :class:`DataError` naming the file
UNREADABLE = (UnicodeDecodeError, OSError, EOFError, lzma.LZMAError, zlib.error)


def _unreadable(path: Path, exc: BaseException) -> DataError:
    if isinstance(exc, UnicodeDecodeError):
        return DataError(
            f"could not read {path}: not UTF-8 text (the byte "
            f"{exc.object[exc.start : exc.start + 1]!r} is not UTF-8); save the file as UTF-8"
        )
    return DataError(f"could not read {path}: {exc} (a damaged or truncated file?)")


def count_records(path: str | Path) -> int:
    """Number of data records (fast scan: newlines, or ``$$$$`` for SDF). Used for the ETA;
    approximate when CSV fields contain quoted newlines. A damaged compressed file is a
    :class:`DataError`."""
    path = Path(path)
    fmt = input_format(path)
    newlines, last, dollars = 0, b"\n", 0
    try:
        with open_binary(path) as fh:
            while block := fh.read(1 << 22):
                newlines += block.count(b"\n")
                dollars += block.count(b"$$$$") if fmt == "sdf" else 0
                last = block[-1:]
    except UNREADABLE as exc:
        raise _unreadable(path, exc) from exc
    if fmt == "sdf":
        return dollars
    lines = newlines + (last != b"\n")
    return max(0, lines - (fmt == "csv"))


def require_columns(frame: pd.DataFrame, columns: Sequence[str], path: object = None) -> None:
    """DataError naming the missing columns (and the available ones) unless ``frame`` has all
    of ``columns``."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        where = path if isinstance(path, (str, Path)) else "table"
        raise DataError(
            f"column(s) {missing} not found in {where}; available: {list(frame.columns)}"
        )


def column_names(header: list[str]) -> list[str]:
    """Header fields -> unique column names, as pandas names them (``Unnamed: i`` for an empty
    name, ``x.1``, ``x.2`` for repeats)."""
    names: list[str] = []
    for i, name in enumerate(header):
        name = name or f"Unnamed: {i}"
        base, k = name, 0
        while name in names:
            k += 1
            name = f"{base}.{k}"
        names.append(name)
    return names


def csv_separator(path: str | Path) -> str:
    """Tab for ``.tsv`` (``.tsv.gz`` too), else comma."""
    return "\t" if ".tsv" in [s.lower() for s in Path(path).suffixes] else ","


def csv_frames(
    path: Path,
    chunk_size: int | None = None,
    *,
    sep: str | None = None,
    required: Sequence[str] = (),
) -> Iterator[pd.DataFrame]:
    """Rows of a CSV / TSV as text, ``chunk_size`` at a time (None: all in one frame); a file
    with a header and no rows gives one empty frame with the columns, an empty file nothing.

    Raises DataError for a missing ``required`` column, a row whose field count differs from
    the header's (naming its line) and a file that is not UTF-8 CSV."""
    sep = csv_separator(path) if sep is None else sep
    try:
        with open_text(path) as fh:
            reader = csv.reader(fh, delimiter=sep)
            header = next(reader, None)
            if header is None:
                return
            columns = column_names(header)
            require_columns(pd.DataFrame(columns=columns), required, path)
            rows: list[list[str]] = []
            yielded = False
            end = reader.line_num
            for record in reader:
                line, end = end + 1, reader.line_num  # a quoted field may span several lines
                if len(record) != len(columns):
                    if len(record) <= 1 and not "".join(record).strip():
                        record = [""] * len(columns)  # blank line: a row of empty fields
                    else:
                        raise DataError(
                            f"{path} line {line}: {len(record)} fields but the header has "
                            f"{len(columns)} ({', '.join(columns)}); a missing, extra or "
                            f"trailing {sep!r} shifts the columns (quote fields that contain it)"
                        )
                rows.append(record)
                if len(rows) == chunk_size:
                    yield pd.DataFrame(rows, columns=columns)
                    rows, yielded = [], True
            if rows or not yielded:
                yield pd.DataFrame(rows, columns=columns)
    except UNREADABLE as exc:
        raise _unreadable(path, exc) from exc
    except csv.Error as exc:
        raise DataError(f"could not read {path}: {exc}") from exc


def _smi_chunks(path: Path, smiles_column: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    """``SMILES [name]`` per line, whitespace separated; a first line whose first field is the
    SMILES column name is a header (its fields name the columns). Every other line is a row; a
    blank line is a row with an empty SMILES (reported ``invalid_input``, never dropped)."""
    columns: list[str] | None = None
    sep: str | None = None
    rows: list[list[str]] = []
    with open_text(path) as fh:
        for number, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if "\x00" in line:
                raise DataError(f"{path} line {number} contains a NUL byte: not a text SMILES file")
            if columns is None:
                sep = "\t" if "\t" in line else None
                first = line.split(sep)
                if first and first[0].strip().lower() == smiles_column.lower():
                    columns = [c.strip() for c in first]
                    continue
                columns = [smiles_column, "name"]
            parts = line.split(sep, len(columns) - 1) if line.strip() else []
            rows.append(parts + [""] * (len(columns) - len(parts)))
            if len(rows) == chunk_size:
                yield pd.DataFrame(rows, columns=columns)
                rows = []
    if rows:
        yield pd.DataFrame(rows, columns=columns)


def _sdf_chunks(
    path: Path, smiles_column: str, chunk_size: int
) -> Iterator[tuple[pd.DataFrame, dict[int, Exception]]]:
    """Records -> SMILES + ``name`` + the properties of the first chunk (later new property
    names are ignored, so that the output has one header)."""
    from rdkit import Chem

    columns: list[str] | None = None
    records: list[dict[str, str]] = []
    failures: dict[int, Exception] = {}
    for record in iter_sdf_records(path, remove_hs=True):
        if record.error is not None:
            failures[len(records)] = record.error
            records.append({})
        else:
            records.append(
                {
                    smiles_column: Chem.MolToSmiles(record.mol),
                    "name": record.name,
                    **record.properties(),
                }
            )
        if len(records) == chunk_size:
            columns = columns or _sdf_columns(records, smiles_column)
            yield _text_frame(records, columns), failures
            records, failures = [], {}
    if records:
        columns = columns or _sdf_columns(records, smiles_column)
        yield _text_frame(records, columns), failures


def _text_frame(records: Sequence[dict[str, str]], columns: list[str]) -> pd.DataFrame:
    """The records' fields, "" where a record has none (a column that no record of the chunk
    has is all-NaN float: made object first, as ``fillna("")`` would upcast it)."""
    frame = pd.DataFrame(records, columns=columns)
    missing = {c: object for c in frame.columns if frame[c].dtype.kind == "f"}
    return frame.astype(missing).fillna("")


def _sdf_columns(records: Sequence[dict[str, str]], smiles_column: str) -> list[str]:
    names = [smiles_column, "name"]
    for rec in records:
        names += [k for k in rec if k not in names]
    return names


def iter_chunks(
    path: str | Path, smiles_column: str = "smiles", chunk_size: int = 4096, skip: int = 0
) -> Iterator[InputChunk]:
    """Chunks of at most ``chunk_size`` rows, numbered from 0; the first ``skip`` rows are read
    and dropped (resume), so rows are counted exactly as in an uninterrupted run."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"input file not found: {path}")
    fmt = input_format(path)
    if fmt == "sdf":
        raw = _sdf_chunks(path, smiles_column, chunk_size)
    elif fmt == "smi":
        raw = ((frame, {}) for frame in _smi_chunks(path, smiles_column, chunk_size))
    else:
        frames = csv_frames(path, chunk_size, required=[smiles_column])
        raw = ((frame, {}) for frame in frames)
    start = 0
    while True:
        try:
            frame, failures = next(raw)
        except StopIteration:
            return
        except UNREADABLE as exc:  # a damaged .gz, bytes that are not UTF-8
            raise _unreadable(path, exc) from exc
        n = len(frame)
        if start + n > skip:
            drop = max(0, skip - start)
            kept = {i - drop: e for i, e in failures.items() if i >= drop}
            yield InputChunk(start + drop, frame.iloc[drop:].reset_index(drop=True), kept)
        start += n


__all__ = [
    "InputChunk",
    "Item",
    "column_names",
    "count_records",
    "csv_frames",
    "csv_separator",
    "input_format",
    "iter_chunks",
    "open_text",
    "require_columns",
]
