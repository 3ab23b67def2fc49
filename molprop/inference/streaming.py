"""Streaming prediction for libraries larger than memory.

The input (CSV / TSV, optionally gzipped; SMI; SDF, read with RDKit's ``ForwardSDMolSupplier``
as SMILES + properties) is read in chunks; each chunk is featurised (optionally by worker
processes, results kept in input order), predicted and appended to the output CSV with a
single write, so memory is bounded by a few chunks whatever the file size. Output row i is
input row i: every input row gets exactly one output row with ``status`` and ``error``.

CSV / TSV rows: every line after the header is a row, blank lines included (a blank line is a
row with an empty SMILES, reported as ``invalid_input``). A row with more or fewer fields than
the header (e.g. a trailing separator that would shift the columns) is a :class:`DataError`
naming the line. SMI: every line is a row, blank lines included.

Resume: a partial output is scanned for complete records (a record ends at a newline outside
quotes); a trailing partial record, if any, is cut off, the header is checked, and prediction
continues with the first input row that has no output row, so the finished file has no
duplicate and no missing row.
"""

from __future__ import annotations

import csv
import ctypes
import gzip
import io
import logging
import os
import shutil
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from molprop.errors import DataError, InvalidInputError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.graph import MolGraph
from molprop.io.table import featurize_rows, require_columns

log = logging.getLogger(__name__)

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


# -- reading ----------------------------------------------------------------------------------
def input_format(path: str | Path) -> str:
    """``csv`` (also .tsv), ``smi`` or ``sdf`` from the file name (a ``.gz`` suffix is allowed)."""
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".sdf", ".sd", ".mol")):
        return "sdf"
    if name.endswith(".smi"):
        return "smi"
    return "csv"


def _open_text(path: Path) -> io.TextIOBase:
    """Text, UTF-8 (a byte-order mark is dropped), newlines as written (for ``csv``)."""
    if str(path).lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _open_binary(path: Path):
    return gzip.open(path, "rb") if str(path).lower().endswith(".gz") else open(path, "rb")


def count_records(path: str | Path) -> int:
    """Number of data records (fast scan: newlines, or ``$$$$`` for SDF). Used for the ETA;
    approximate when CSV fields contain quoted newlines."""
    path = Path(path)
    fmt = input_format(path)
    newlines, last, dollars = 0, b"\n", 0
    with _open_binary(path) as fh:
        while block := fh.read(1 << 22):
            newlines += block.count(b"\n")
            dollars += block.count(b"$$$$") if fmt == "sdf" else 0
            last = block[-1:]
    if fmt == "sdf":
        return dollars
    lines = newlines + (last != b"\n")
    return max(0, lines - (fmt == "csv"))


def _column_names(header: list[str]) -> list[str]:
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


def _csv_chunks(path: Path, smiles_column: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    """Rows of a CSV / TSV as text. Not pandas: it silently skips blank lines and, when the
    first data row has one field more than the header (a trailing comma), takes the first
    column as the index, shifting every column by one."""
    sep = "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","
    try:
        with _open_text(path) as fh:
            reader = csv.reader(fh, delimiter=sep)
            header = next(reader, None)
            if header is None:
                return
            columns = _column_names(header)
            require_columns(pd.DataFrame(columns=columns), [smiles_column], path)
            rows: list[list[str]] = []
            end = reader.line_num
            for record in reader:
                line, end = end + 1, reader.line_num  # a quoted field may span several lines
                if len(record) != len(columns):
                    if len(record) <= 1 and not "".join(record).strip():
                        record = [""] * len(columns)  # blank line: a row with an empty SMILES
                    else:
                        raise DataError(
                            f"{path} line {line}: {len(record)} fields but the header has "
                            f"{len(columns)} ({', '.join(columns)}); a missing, extra or "
                            f"trailing {sep!r} shifts the columns (quote fields that contain it)"
                        )
                rows.append(record)
                if len(rows) == chunk_size:
                    yield pd.DataFrame(rows, columns=columns)
                    rows = []
            if rows:
                yield pd.DataFrame(rows, columns=columns)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DataError(f"could not read {path}: {exc}") from exc


def _smi_chunks(path: Path, smiles_column: str, chunk_size: int) -> Iterator[pd.DataFrame]:
    """``SMILES [name]`` per line, whitespace separated; a first line whose first field is the
    SMILES column name is a header (its fields name the columns). Every other line is a row; a
    blank line is a row with an empty SMILES (reported ``invalid_input``, never dropped)."""
    columns: list[str] | None = None
    sep: str | None = None
    rows: list[list[str]] = []
    with _open_text(path) as fh:
        for line in fh:
            line = line.rstrip("\r\n")
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
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    columns: list[str] | None = None
    records: list[dict[str, str]] = []
    failures: dict[int, Exception] = {}
    index = 0
    with _open_binary(path) as fh:
        for mol in Chem.ForwardSDMolSupplier(fh, sanitize=True, removeHs=True):
            if mol is None:
                failures[len(records)] = InvalidInputError(
                    f"SDF record {index} of {path}: RDKit could not read the molecule"
                )
                records.append({})
            else:
                props = {k: mol.GetProp(k) for k in mol.GetPropNames()}
                records.append(
                    {
                        smiles_column: Chem.MolToSmiles(mol),
                        "name": mol.GetProp("_Name") if mol.HasProp("_Name") else "",
                        **props,
                    }
                )
            index += 1
            if len(records) == chunk_size:
                columns = columns or _sdf_columns(records, smiles_column)
                yield pd.DataFrame(records, columns=columns).fillna(""), failures
                records, failures = [], {}
    if records:
        columns = columns or _sdf_columns(records, smiles_column)
        yield pd.DataFrame(records, columns=columns).fillna(""), failures


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
    else:
        reader = _smi_chunks if fmt == "smi" else _csv_chunks
        raw = ((frame, {}) for frame in reader(path, smiles_column, chunk_size))
    start = 0
    for frame, failures in raw:
        n = len(frame)
        if start + n > skip:
            drop = max(0, skip - start)
            kept = {i - drop: e for i, e in failures.items() if i >= drop}
            yield InputChunk(start + drop, frame.iloc[drop:].reset_index(drop=True), kept)
        start += n


# -- featurisation in worker processes ----------------------------------------------------------
_WORKER_FEATURIZER = None


def _init_worker(config: dict) -> None:
    global _WORKER_FEATURIZER
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _WORKER_FEATURIZER = build_featurizer(FeaturizerConfig.from_dict(config))


def _featurize_in_worker(smiles: list[str]) -> list[Item]:
    return featurize_rows(smiles, _WORKER_FEATURIZER.from_smiles)


class FeaturizerPool:
    """Featurises lists of SMILES in ``num_workers`` processes (0: in this process).

    ``submit`` returns futures whose results concatenate, in order, to one item per SMILES.
    """

    def __init__(self, featurizer, featurizer_config: dict, num_workers: int = 0) -> None:
        self.featurizer = featurizer
        self.num_workers = int(num_workers)
        self.executor = None
        if self.num_workers > 0:
            self.executor = ProcessPoolExecutor(
                self.num_workers,
                mp_context=get_context("spawn"),
                initializer=_init_worker,
                initargs=(featurizer_config,),
            )

    def submit(self, smiles: list[str]) -> list[Future]:
        if self.executor is None:
            done: Future = Future()
            done.set_result(featurize_rows(smiles, self.featurizer.from_smiles))
            return [done]
        parts = max(1, 2 * self.num_workers)
        step = -(-len(smiles) // parts) or 1
        return [
            self.executor.submit(_featurize_in_worker, smiles[i : i + step])
            for i in range(0, len(smiles), step)
        ]

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> FeaturizerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- output -----------------------------------------------------------------------------------
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


def append_chunk(path: Path, frame: pd.DataFrame, header: bool) -> None:
    """Append ``frame`` as CSV text with one ``write`` and flush it to disk (a kill leaves
    whole chunks, at worst one partial chunk that :func:`complete_records` detects)."""
    data = frame.to_csv(index=False, header=header, lineterminator="\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _load_trim()


def release_freed_memory() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim``; a no-op elsewhere).

    Called after each chunk: chunks of differently sized graphs fragment the heap, and without
    this the resident size of a long run creeps up (100k HIV rows, shipped-size model: RSS after
    the last chunk 1,201 → 903 MiB, peak 1,529 → 1,437 MiB; ``docs/results/scale.md``)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def append_checked(path: Path, frame: pd.DataFrame, header: str | None) -> str:
    """Append ``frame`` to the output whose header line is ``header`` (None: the file is empty,
    write the header); a resumed output with other columns is an error. -> the header line."""
    line = frame.iloc[:0].to_csv(index=False, lineterminator="\n").rstrip("\n")
    if header is not None and line != header:
        raise DataError(
            f"cannot resume {path}: its header {header!r} differs from this run's columns {line!r}"
        )
    append_chunk(path, frame, header=header is None)
    return line


# -- the loop -----------------------------------------------------------------------------------
@dataclass
class StreamSummary:
    """Result of :func:`predict_stream`."""

    rows_total: int
    rows_resumed: int
    rows_written: int
    status: dict[str, int]
    seconds: float

    @property
    def molecules_per_second(self) -> float:
        return self.rows_written / self.seconds if self.seconds > 0 else float("nan")


def predict_stream(
    predictor,
    input_path: str | Path,
    output_path: str | Path,
    smiles_column: str = "smiles",
    *,
    batch_size: int = 256,
    chunk_size: int = 4096,
    num_workers: int = 0,
    resume: bool = False,
    progress: bool = True,
    prefetch: int = 2,
) -> StreamSummary:
    """Predict every row of ``input_path`` into ``output_path`` (CSV), chunk by chunk.

    Columns: the input columns, then the predictor's columns (targets, ``<target>_std`` for
    ensembles, ``status``, ``error``, ...). Featurisation of up to ``prefetch`` chunks runs
    ahead in the workers while the model predicts the current chunk.
    """
    output_path = Path(output_path)
    done, header = prepare_output(output_path, resume)
    if done:
        log.info("resuming %s: %d rows already written", output_path, done)
    total = count_records(input_path) if progress else None
    status: Counter[str] = Counter()
    written = 0
    start = time.perf_counter()
    bar = tqdm(
        total=total,
        initial=done,
        unit="mol",
        unit_scale=True,
        desc="predicting",
        disable=not progress,
        smoothing=0.1,
    )
    pool = FeaturizerPool(predictor.featurizer, predictor.config.featurizer.to_dict(), num_workers)
    pending: deque[tuple[InputChunk, list[Future]]] = deque()

    def finish(chunk: InputChunk, futures: list[Future]) -> None:
        nonlocal header, written
        items = chunk.with_failures([item for f in futures for item in f.result()])
        out = predictor.predict_frame(chunk.frame, smiles_column, batch_size, items=items)
        header = append_checked(output_path, out, header)
        written += len(out)
        status.update(out["status"].tolist())
        bar.update(len(out))
        del out, items
        release_freed_memory()

    try:
        with pool:
            for chunk in iter_chunks(input_path, smiles_column, chunk_size, skip=done):
                pending.append((chunk, pool.submit(chunk.smiles(smiles_column))))
                if len(pending) > prefetch:
                    finish(*pending.popleft())
            while pending:
                finish(*pending.popleft())
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    summary = StreamSummary(done + written, done, written, dict(status), seconds)
    log.info(
        "predicted %d rows (%d resumed) in %.1f s: %.0f molecules/s, %s",
        summary.rows_total,
        done,
        seconds,
        summary.molecules_per_second,
        dict(status),
    )
    return summary


__all__ = [
    "InputChunk",
    "StreamSummary",
    "commit_output",
    "count_records",
    "iter_chunks",
    "partial_path",
    "predict_stream",
    "stage_output",
]
