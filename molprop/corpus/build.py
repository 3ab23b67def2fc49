"""Build the pretraining corpus: read SMILES from offline sources, standardise, deduplicate.

Each input SMILES is parsed (:func:`molprop.chem.smiles.parse_smiles`) and standardised the way
prediction standardises it (:func:`molprop.chem.standardize.standardize`: largest organic
fragment, neutralised, the organic elements only), then written as RDKit canonical SMILES with
its InChIKey. The first occurrence of an InChIKey wins (sources in the order given, rows in file
order); later ones are counted as duplicates. A molecule that fails is counted per source and
listed in ``failures.csv`` with the reason, never dropped silently.

Output (``out_dir``), rebuilt byte-identically from the same inputs (fixed order, fixed seed,
no timestamps)::

    corpus.csv      smiles,inchikey,source: the distinct molecules in a seeded random order,
                    so the first N rows are a random N-subset (labels use a prefix)
    failures.csv    source,row,input,reason
    manifest.json   sources (file, sha256, licence, rows, ok, failed, duplicates, added),
                    totals, seed, RDKit version, sha256 of corpus.csv and failures.csv
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from rdkit import Chem, rdBase

from molprop.chem.smiles import parse_smiles
from molprop.chem.standardize import standardize
from molprop.errors import ConfigError, MolpropError

log = logging.getLogger(__name__)

CORPUS_NAME = "corpus.csv"
FAILURES_NAME = "failures.csv"
MANIFEST_NAME = "manifest.json"
#: seed of the corpus order (a permutation of the deduplicated molecules)
DEFAULT_SEED = 0
#: SMILES column names looked for in a table source, case-insensitively (``mol``: BACE)
SMILES_COLUMNS = ("smiles", "mol")
_CHUNK = 2000


@dataclass(frozen=True)
class CorpusSource:
    """One input: ``path`` a CSV (optionally .gz), or a wheel / zip with ``member`` the CSV
    inside it; ``column`` the SMILES column (None: the first of :data:`SMILES_COLUMNS`)."""

    name: str
    path: str
    licence: str
    member: str = ""
    column: str | None = None

    def open_text(self) -> io.TextIOBase:
        path = Path(self.path)
        if self.member:
            with zipfile.ZipFile(path) as archive:
                raw = archive.read(self.member)
        else:
            raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return io.StringIO(raw.decode("utf-8"))

    def smiles(self) -> Iterator[str]:
        """The SMILES of the source's rows, in file order."""
        reader = csv.reader(self.open_text())
        header = next(reader, None)
        if header is None:
            return
        lower = [h.strip().lower() for h in header]
        wanted = [self.column.lower()] if self.column else list(SMILES_COLUMNS)
        col = next((lower.index(c) for c in wanted if c in lower), None)
        if col is None:
            raise ConfigError(f"source {self.name}: no SMILES column ({wanted}) in {header}")
        for row in reader:
            yield row[col] if col < len(row) else ""


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: MOSES (the ``molsets`` wheel, MIT; ZINC Clean Leads drug-like molecules): the three sets
MOSES_MEMBERS = ("train", "test", "test_scaffolds")
MOSES_LICENCE = "MIT (molsets 0.3.1 wheel, Insilico Medicine); molecules from ZINC Clean Leads"
SHARED_LICENCE = "see SOURCES.md next to the file (per-file repository licence and data terms)"


def default_sources(
    moses_wheel: str | Path | None, shared_data: str | Path | None
) -> list[CorpusSource]:
    """MOSES train/test/test-scaffold sets from the wheel, then every CSV table under
    ``shared_data`` that has a SMILES column (sorted by path)."""
    sources: list[CorpusSource] = []
    if moses_wheel is not None:
        for member in MOSES_MEMBERS:
            sources.append(
                CorpusSource(
                    f"moses/{member}",
                    str(moses_wheel),
                    MOSES_LICENCE,
                    member=f"moses/dataset/data/{member}.csv.gz",
                    column="SMILES",
                )
            )
    if shared_data is not None:
        root = Path(shared_data)
        tables = sorted(
            p for p in root.rglob("*") if p.is_file() and p.name.endswith((".csv", ".csv.gz"))
        )
        for path in tables:
            source = CorpusSource(
                f"shared/{path.relative_to(root).as_posix()}", str(path), SHARED_LICENCE
            )
            try:
                header = next(csv.reader(source.open_text()), [])
            except (OSError, UnicodeDecodeError):
                continue
            if any(h.strip().lower() in SMILES_COLUMNS for h in header):
                sources.append(source)
    return sources


def standardise_smiles(smiles: str) -> tuple[str, str, str]:
    """``(canonical SMILES, InChIKey, "")`` of the standardised molecule, or ``("", "",
    reason)`` when it is rejected."""
    try:
        mol = parse_smiles(smiles)
        std = standardize(mol)
        canonical = Chem.MolToSmiles(std.mol)
        key = Chem.MolToInchiKey(std.mol)
    except MolpropError as exc:
        return "", "", str(exc)
    except Exception as exc:  # RDKit raises several types
        return "", "", f"{type(exc).__name__}: {exc}"
    if not key:
        return "", "", "no InChIKey (InChI generation failed)"
    return canonical, key, ""


def _standardise_chunk(chunk: Sequence[str]) -> list[tuple[str, str, str]]:
    return [standardise_smiles(s) for s in chunk]


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _map(func, chunks: list, workers: int) -> Iterator:
    """``func`` over ``chunks`` in order, in ``workers`` processes (1: this process)."""
    if workers <= 1:
        yield from map(func, chunks)
        return
    with get_context("fork").Pool(workers) as pool:
        yield from pool.imap(func, chunks)


def build_corpus(
    sources: Sequence[CorpusSource],
    out_dir: str | Path,
    workers: int = 1,
    seed: int = DEFAULT_SEED,
    progress: bool = True,
) -> dict:
    """Standardise, deduplicate and write the corpus (see the module docstring); returns the
    manifest."""
    from tqdm.auto import tqdm

    if not sources:
        raise ConfigError("no corpus sources")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    smiles_out: list[str] = []
    keys_out: list[str] = []
    source_of: list[int] = []
    manifest_sources = []
    with open(out / FAILURES_NAME, "w", newline="") as fail_fh:
        failures = csv.writer(fail_fh, lineterminator="\n")
        failures.writerow(["source", "row", "input", "reason"])
        for s_index, source in enumerate(sources):
            rows = list(source.smiles())
            counts = {"rows": len(rows), "ok": 0, "failed": 0, "duplicates": 0, "added": 0}
            bar = tqdm(total=len(rows), desc=source.name, unit="mol", disable=not progress)
            row = 0
            for results in _map(_standardise_chunk, list(_chunks(rows, _CHUNK)), workers):
                for canonical, key, reason in results:
                    if reason:
                        counts["failed"] += 1
                        failures.writerow([source.name, row, rows[row], reason])
                    else:
                        counts["ok"] += 1
                        if key in seen:
                            counts["duplicates"] += 1
                        else:
                            seen[key] = len(keys_out)
                            smiles_out.append(canonical)
                            keys_out.append(key)
                            source_of.append(s_index)
                            counts["added"] += 1
                    row += 1
                bar.update(len(results))
            bar.close()
            path = Path(source.path)
            manifest_sources.append(
                {
                    **asdict(source),
                    "path": path.name,
                    "sha256": sha256_of(path),
                    **counts,
                }
            )
            log.info("corpus source %s: %s", source.name, counts)
    order = np.random.default_rng(seed).permutation(len(keys_out))
    with open(out / CORPUS_NAME, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["smiles", "inchikey", "source"])
        for i in order.tolist():
            writer.writerow([smiles_out[i], keys_out[i], sources[source_of[i]].name])
    totals = {
        key: sum(s[key] for s in manifest_sources)
        for key in ("rows", "ok", "failed", "duplicates", "added")
    }
    manifest = {
        "molecules": len(keys_out),
        "totals": totals,
        "seed": seed,
        "order": "numpy default_rng(seed).permutation of the molecules in first-seen order",
        "standardisation": "parse_smiles -> molprop.chem.standardize (largest organic fragment, "
        "neutralised, organic elements) -> RDKit canonical SMILES; dedupe by InChIKey, first "
        "occurrence kept",
        "rdkit": rdBase.rdkitVersion,
        "sources": manifest_sources,
        "files": {
            CORPUS_NAME: sha256_of(out / CORPUS_NAME),
            FAILURES_NAME: sha256_of(out / FAILURES_NAME),
        },
    }
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def read_corpus(corpus_dir: str | Path, n: int | None = None) -> list[str]:
    """The first ``n`` SMILES of the corpus (all when None)."""
    out: list[str] = []
    with open(Path(corpus_dir) / CORPUS_NAME, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for row in reader:
            if n is not None and len(out) >= n:
                break
            out.append(row[0])
    return out


__all__ = [
    "CORPUS_NAME",
    "CorpusSource",
    "build_corpus",
    "default_sources",
    "read_corpus",
    "sha256_of",
    "standardise_smiles",
]
