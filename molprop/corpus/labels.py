"""Computed labels of the corpus: RDKit 2D descriptors of its first N molecules.

:func:`compute_labels` computes every descriptor of ``rdkit.Chem.Descriptors`` for the first
``n`` corpus rows in ``workers`` processes (progress bar), in shards of ``shard_size`` molecules
cached as ``labels/desc_<k>.npy`` (float32; a shard already on disk for the same molecules is
reused). The timeout counts the worker's CPU time (``ITIMER_PROF``), not wall time, so a busy
machine does not make a molecule time out and the labels rebuild identically. A value that is NaN, infinite or outside float32 is stored as NaN and masked in
training. A molecule whose descriptor code raises or runs past ``timeout_s`` gets an all-NaN row
and is listed in ``labels/failures.csv``.

The statistics (``labels/meta.json``) describe the training targets: descriptors that are
constant over the labelled molecules, or finite for fewer than half of them, are dropped; the
others are scaled robustly, ``(x - median) / IQR`` (the standard deviation where the IQR is 0),
and clipped to ``[-clip, clip]`` (:func:`load_scaled_labels`).
"""

from __future__ import annotations

import csv
import json
import logging
import signal
import warnings
from collections.abc import Sequence
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from rdkit import Chem, rdBase
from rdkit.Chem import Descriptors

from molprop.corpus.build import CORPUS_NAME, read_corpus, sha256_of
from molprop.errors import ConfigError

log = logging.getLogger(__name__)

LABELS_DIR = "labels"
META_NAME = "meta.json"
FAILURES_NAME = "failures.csv"
DEFAULT_SHARD = 50_000
DEFAULT_CLIP = 6.0
DEFAULT_TIMEOUT_S = 10.0
_CHUNK = 500
_F32_MAX = float(np.finfo(np.float32).max)


def descriptor_names() -> list[str]:
    """The RDKit 2D descriptors computed, in RDKit's order."""
    return [name for name, _ in Descriptors._descList]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout


def descriptor_row(smiles: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[np.ndarray, str]:
    """(D,) float32 descriptors (NaN where a value is NaN, infinite, out of float32 range or
    its function raised) and ``""``, or an all-NaN row and the reason the molecule failed."""
    funcs = Descriptors._descList
    row = np.full(len(funcs), np.nan, dtype=np.float32)
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return row, "unparsable SMILES"
    use_alarm = timeout_s > 0 and hasattr(signal, "setitimer")
    if use_alarm:
        previous = signal.signal(signal.SIGPROF, _alarm)
        signal.setitimer(signal.ITIMER_PROF, timeout_s)
    try:
        for j, (_, func) in enumerate(funcs):
            try:
                value = float(func(mol))
            except _Timeout:
                raise
            except Exception:  # one descriptor failing masks that value only
                continue
            if np.isfinite(value) and abs(value) <= _F32_MAX:
                row[j] = value
    except _Timeout:
        return np.full(
            len(funcs), np.nan, dtype=np.float32
        ), f"timed out after {timeout_s} s of CPU time"
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
    return row, ""


def _chunk_rows(args: tuple[Sequence[str], float]) -> list[tuple[np.ndarray, str]]:
    chunk, timeout_s = args
    return [descriptor_row(s, timeout_s) for s in chunk]


def _shard_path(directory: Path, k: int) -> Path:
    return directory / f"desc_{k:05d}.npy"


def compute_labels(
    corpus_dir: str | Path,
    n: int,
    workers: int = 1,
    shard_size: int = DEFAULT_SHARD,
    clip: float = DEFAULT_CLIP,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
) -> dict:
    """Descriptors of the first ``n`` corpus molecules, cached in shards, and their scaling
    statistics (see the module docstring); returns ``meta.json``'s content."""
    from tqdm.auto import tqdm

    corpus_dir = Path(corpus_dir)
    smiles = read_corpus(corpus_dir, n)
    if len(smiles) < n:
        raise ConfigError(f"the corpus in {corpus_dir} has {len(smiles)} molecules, asked for {n}")
    if n < 2:
        raise ConfigError("labels need at least 2 molecules")
    out = corpus_dir / LABELS_DIR
    out.mkdir(parents=True, exist_ok=True)
    names = descriptor_names()
    corpus_sha = sha256_of(corpus_dir / CORPUS_NAME)
    if (out / META_NAME).exists():  # shards of another corpus are not reused
        if json.loads((out / META_NAME).read_text()).get("corpus_sha256") != corpus_sha:
            for old in out.glob("*.npy"):
                old.unlink()
    n_shards = (n + shard_size - 1) // shard_size
    failed: list[tuple[int, str, str]] = []
    bar = tqdm(total=n, desc="descriptors", unit="mol", disable=not progress)
    ctx = get_context("fork")
    pool = ctx.Pool(workers) if workers > 1 else None
    try:
        for k in range(n_shards):
            lo, hi = k * shard_size, min(n, (k + 1) * shard_size)
            path = _shard_path(out, k)
            fail_path = out / f"failures_{k:05d}.csv"
            if path.exists() and fail_path.exists():
                cached = np.load(path, mmap_mode="r")
                if cached.shape == (hi - lo, len(names)):
                    with open(fail_path, newline="") as fh:
                        records = list(csv.reader(fh))[1:]
                    failed += [(int(r[0]), r[1], r[2]) for r in records]
                    bar.update(hi - lo)
                    continue
            part = smiles[lo:hi]
            chunks = [(part[i : i + _CHUNK], timeout_s) for i in range(0, len(part), _CHUNK)]
            results = pool.imap(_chunk_rows, chunks) if pool else map(_chunk_rows, chunks)
            block = np.empty((hi - lo, len(names)), dtype=np.float32)
            shard_failed = []
            i = 0
            for rows in results:
                for row, reason in rows:
                    block[i] = row
                    if reason:
                        shard_failed.append((lo + i, part[i], reason))
                    i += 1
                bar.update(len(rows))
            with open(fail_path, "w", newline="") as fh:
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(["row", "smiles", "reason"])
                writer.writerows(shard_failed)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, block)
            tmp.replace(path)
            failed += shard_failed
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        bar.close()
    with open(out / FAILURES_NAME, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["row", "smiles", "reason"])
        writer.writerows(failed)
    raw = load_raw_labels(out, n_shards)
    meta = _statistics(raw, names, clip)
    meta.update(
        {
            "n_molecules": n,
            "n_failed": len(failed),
            "n_masked_values": int(np.isnan(raw).sum()),
            "shard_size": shard_size,
            "shards": [_shard_path(out, k).name for k in range(n_shards)],
            "timeout_s": timeout_s,
            "rdkit": rdBase.rdkitVersion,
            "corpus_sha256": corpus_sha,
            "sha256": {
                _shard_path(out, k).name: sha256_of(_shard_path(out, k)) for k in range(n_shards)
            },
        }
    )
    (out / META_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def load_raw_labels(labels_dir: str | Path, n_shards: int | None = None) -> np.ndarray:
    """(n, D) float32 descriptors of every shard, NaN where masked."""
    labels_dir = Path(labels_dir)
    if n_shards is None:
        paths = [labels_dir / p for p in json.loads((labels_dir / META_NAME).read_text())["shards"]]
    else:
        paths = [_shard_path(labels_dir, k) for k in range(n_shards)]
    return np.concatenate([np.load(p) for p in paths], axis=0)


def _statistics(raw: np.ndarray, names: list[str], clip: float) -> dict:
    finite = np.isfinite(raw)
    frac = finite.mean(axis=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: dropped below
        lo = np.nanmin(np.where(finite, raw, np.nan), axis=0)
        hi = np.nanmax(np.where(finite, raw, np.nan), axis=0)
        q25, median, q75 = np.nanpercentile(raw.astype(np.float64), [25, 50, 75], axis=0)
        std = np.nanstd(raw.astype(np.float64), axis=0)
    keep, dropped = [], {}
    for j, name in enumerate(names):
        if frac[j] < 0.5:
            dropped[name] = f"finite for {frac[j]:.1%} of molecules"
        elif not hi[j] > lo[j]:
            dropped[name] = "constant"
        else:
            keep.append(j)
    iqr = q75 - q25
    scale = np.where(iqr > 0, iqr, std)
    return {
        "names": [names[j] for j in keep],
        "columns": keep,
        "median": [float(median[j]) for j in keep],
        "scale": [float(scale[j]) for j in keep],
        "clip": clip,
        "dropped": dropped,
        "n_descriptors": len(names),
    }


def load_scaled_labels(labels_dir: str | Path) -> tuple[np.ndarray, dict]:
    """(n, D') float32 training targets, robust-scaled and clipped, NaN where masked; and the
    statistics (``meta.json``)."""
    labels_dir = Path(labels_dir)
    meta_path = labels_dir / META_NAME
    if not meta_path.exists():
        raise ConfigError(f"no {META_NAME} in {labels_dir}: compute the labels first")
    meta = json.loads(meta_path.read_text())
    raw = load_raw_labels(labels_dir)[:, meta["columns"]]
    scaled = (raw - np.asarray(meta["median"], np.float32)) / np.asarray(meta["scale"], np.float32)
    clip = float(meta["clip"])
    return np.clip(scaled, -clip, clip).astype(np.float32), meta


__all__ = [
    "compute_labels",
    "descriptor_names",
    "descriptor_row",
    "load_raw_labels",
    "load_scaled_labels",
]
