"""The crash-safe CSV output of streaming prediction: append whole chunks, resume, commit.

A run writes ``<output>.partial`` (:func:`stage_output`) and renames it to the output when it
has finished (:func:`commit_output`), so a failed or killed run leaves an existing output as it
was. Each chunk is appended with one ``write`` and flushed to disk (:func:`append_checked`), so
a kill leaves whole chunks and at worst one partial record at the end.

Spreadsheet safety: every CSV molprop writes for people to open (``molprop predict``,
``molprop embed``, ``molprop explain``, the service's job results) goes through
:func:`spreadsheet_safe`. A text cell (a SMILES, an id, an error message, a column name) that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be run as a formula by
Excel, LibreOffice or Google Sheets (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``); it is written
with a single quote in front (``'=HYPERLINK(...)``), the OWASP rule for CSV injection. Numbers
are left alone: numeric columns, and text that is a plain decimal number (``-1.23``, ``+4e-5``,
``-inf``), so that quoting is idempotent (a CSV read back as text and written again, as the
parts of a multi-process run are, is unchanged).

Resume: :func:`prepare_output` scans a partial output for complete records (a record ends at a
newline outside quotes), cuts off a trailing partial record and returns the rows already
written and the header, against which every appended chunk is checked.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shutil
from pathlib import Path

import pandas as pd

from molprop.errors import DataError

log = logging.getLogger(__name__)


def complete_records(path: Path) -> tuple[int, int, str]:
    """Scan a CSV: -> (number of complete records incl. the header, byte length of those
    records, header line). A record ends at a newline outside double quotes."""
    records, end, header, inside = 0, 0, "", False
    offset = 0
    with open(path, "rb") as fh:
        for line in fh:
            offset += len(line)
            inside ^= line.count(b'"') % 2 == 1
            if line.endswith(b"\n") and not inside:
                if records == 0:
                    header = line.decode("utf-8").rstrip("\r\n")
                records += 1
                end = offset
    return records, end, header


def prepare_output(path: Path, resume: bool) -> tuple[int, str | None]:
    """-> (rows already written, header found). Without ``resume`` an existing file is replaced;
    with it, a trailing partial record is cut off."""
    if not resume or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        return 0, None
    records, end, header = complete_records(path)
    if os.path.getsize(path) != end:
        log.warning(
            "cutting a partial last record from %s (%d bytes)", path, os.path.getsize(path) - end
        )
        os.truncate(path, end)
    if records == 0:
        return 0, None
    return records - 1, header


def partial_path(output: str | Path) -> Path:
    """Where ``molprop predict`` writes before renaming to ``output``: ``<output>.partial`` in
    the same directory (same filesystem, so the rename is atomic)."""
    output = Path(output)
    return output.with_name(output.name + ".partial")


def stage_output(output: str | Path, resume: bool) -> Path:
    """-> the partial file a run writes (see :func:`partial_path`); ``output`` itself is only
    replaced by :func:`commit_output` at the end, so a failed run leaves it as it was.

    With ``resume``, an existing partial file (an interrupted run) is continued; if there is
    none but ``output`` exists (a finished run, or a partial output of an older molprop), a
    copy of it is continued. Without ``resume`` the partial file is started afresh by
    :func:`prepare_output`."""
    output = Path(output)
    staged = partial_path(output)
    staged.parent.mkdir(parents=True, exist_ok=True)
    if resume and not staged.exists() and output.exists():
        copy = staged.with_name(f"{staged.name}.{os.getpid()}.copy")
        shutil.copyfile(output, copy)
        os.replace(copy, staged)  # atomic: concurrent ranks see the whole copy or none
    return staged


def commit_output(staged: str | Path, output: str | Path) -> None:
    """Atomically replace ``output`` by the finished ``staged`` file."""
    os.replace(staged, output)


#: first characters that make a spreadsheet read a cell as a formula
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: a plain number as pandas writes one (``-inf`` too), which a spreadsheet cannot run
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf)")


def safe_cell(value: object) -> object:
    """``value`` with a ``'`` in front when it is text a spreadsheet would run as a formula
    (it starts with one of :data:`FORMULA_STARTS` and is not a plain number); anything else
    (numbers, NaN, other text) unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`safe_cell` applied to its column names and to every text cell
    (numeric, boolean and missing cells are left as they are); ``frame`` itself is unchanged."""
    out = frame.copy(deep=False)
    out.columns = [safe_cell(c) for c in frame.columns]
    for j in range(frame.shape[1]):
        column = frame.iloc[:, j]
        if column.dtype == object or isinstance(column.dtype, pd.StringDtype):
            out.isetitem(j, column.map(safe_cell))
    return out


def csv_records(frame: pd.DataFrame, header: bool = False) -> str:
    """``frame`` as the CSV text an output holds: records ending in ``\\n``, no index, the
    header line first if ``header`` (the service's jobs store chunks of it the same way), text
    cells spreadsheet-safe (:func:`spreadsheet_safe`)."""
    return spreadsheet_safe(frame).to_csv(index=False, header=header, lineterminator="\n")


def write_csv(frame: pd.DataFrame, path: str | Path, **options) -> None:
    """``frame`` to the CSV file ``path`` (pandas ``to_csv`` ``options``, e.g. compression),
    no index, text cells spreadsheet-safe (:func:`spreadsheet_safe`)."""
    spreadsheet_safe(frame).to_csv(path, index=False, **options)


def csv_header(frame: pd.DataFrame) -> str:
    """The header line ``frame``'s CSV text starts with (without the newline)."""
    return csv_records(frame.iloc[:0], header=True).rstrip("\n")


def append_chunk(path: Path, frame: pd.DataFrame, header: bool) -> None:
    """Append ``frame`` as CSV text with one ``write`` and flush it to disk (a kill leaves
    whole chunks, at worst one partial chunk that :func:`complete_records` detects)."""
    data = csv_records(frame, header).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def append_checked(path: Path, frame: pd.DataFrame, header: str | None) -> str:
    """Append ``frame`` to the output whose header line is ``header`` (None: the file is empty,
    write the header); a resumed output with other columns is an error. -> the header line."""
    line = csv_header(frame)
    if header is not None and line != header:
        raise DataError(
            f"cannot resume {path}: its header {header!r} differs from this run's columns {line!r}"
        )
    append_chunk(path, frame, header=header is None)
    return line


def _load_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _load_trim()


def release_freed_memory() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim``; a no-op elsewhere).

    Called after each chunk is written: chunks of differently sized graphs fragment the heap,
    and without this the resident size of a long run creeps up (100k HIV rows, shipped-size
    model: RSS after the last chunk 1,201 → 903 MiB, peak 1,529 → 1,437 MiB;
    ``docs/results/scale.md``)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


__all__ = [
    "FORMULA_STARTS",
    "append_checked",
    "append_chunk",
    "commit_output",
    "complete_records",
    "csv_header",
    "csv_records",
    "partial_path",
    "prepare_output",
    "release_freed_memory",
    "safe_cell",
    "spreadsheet_safe",
    "stage_output",
    "write_csv",
]
