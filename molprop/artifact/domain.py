"""Applicability domain: is a query molecule close enough to the training set?

Criterion (documented in every model card): a molecule is *in domain* when its maximum Tanimoto
similarity to the training-set molecules, on Morgan fingerprints (radius 2, 2048 bits, RDKit),
is at least the artifact's ``threshold`` **and** its heavy-atom count lies within the training
set's range (min..max, inclusive). The size check exists because fingerprints hardly see size:
a 999-carbon chain has the same Morgan bits as octane (similarity 1.0) yet is far outside what
the model was trained on. The threshold is calibrated on the training set itself:
the 5th percentile of each training molecule's leave-one-out nearest-neighbour similarity, so
that a query counts as in domain when it is at least as close to the training data as 95% of
the training molecules are to each other. The ensemble spread is reported next to it (as
``uncertainty``) and is not folded into the flag.

The domain also records the elements of the training molecules (``elements``): the chemistry
checks before the model (:mod:`molprop.chem.standardize`) call a molecule with any other element
``unsupported``.

Storage: ``domain.safetensors`` in the artifact directory, one tensor ``fingerprints`` of shape
``(n_train, n_bits / 8)`` uint8 (bits packed with ``numpy.packbits``) and metadata strings
``radius``, ``n_bits``, ``threshold``, ``percentile``, ``n_train``, ``heavy_atoms_min``,
``heavy_atoms_max``, ``elements`` (comma-separated symbols). No pickle. Files without
``elements`` load with ``elements=None`` (the checks then use the organic subset). Files written before the size range existed (no
``heavy_atoms_*`` keys) still load; for them only the similarity criterion applies (logged once
at load) until the domain is refitted (``add_domain_to_artifact``, run by ``molprop train`` and
``python -m molprop.pretrained_recipes --stage finish``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from molprop.artifact.paths import DOMAIN_NAME, SPLIT_NAME, artifact_file
from molprop.artifact.split import read_split
from molprop.chem.fingerprints import N_BITS, RADIUS, morgan_bits
from molprop.chem.smiles import parse_smiles
from molprop.errors import ArtifactError

log = logging.getLogger(__name__)

PERCENTILE = 5.0
_CHUNK = 32  # query rows per block: (chunk, n_train, n_words) uint64, ~27 MB for 3,400 train
_GEMM_MIN_QUERIES = 64  # from this many queries on, intersections by matrix product
_GEMM_CHUNK = 2048  # reference rows per product: 2048 x n_bits float32 (16 MB at 2048 bits)


def fingerprints_and_sizes(
    smiles: Sequence[str],
    radius: int = RADIUS,
    n_bits: int = N_BITS,
    elements: set[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """SMILES -> ((n, n_bits / 8) uint8 packed Morgan bits, (n,) int64 heavy-atom counts); an
    unparsable SMILES gives all-zero bits and a count of -1. ``elements``: a set that collects
    the element symbols of the parsed molecules (hydrogens included)."""
    out = np.zeros((len(smiles), n_bits // 8), dtype=np.uint8)
    heavy = np.full(len(smiles), -1, dtype=np.int64)
    for i, smi in enumerate(smiles):
        try:
            mol = parse_smiles(smi)
        except Exception:  # invalid (or not even encodable) input: no bits, similarity 0
            continue
        out[i] = morgan_bits(mol, radius, n_bits)
        heavy[i] = mol.GetNumHeavyAtoms()
        if elements is not None:
            elements.update(atom.GetSymbol() for atom in mol.GetAtoms())
            elements.add("H")  # implicit hydrogens
    return out, heavy


def fingerprint_bits(
    smiles: Sequence[str], radius: int = RADIUS, n_bits: int = N_BITS
) -> np.ndarray:
    """SMILES -> (n, n_bits / 8) uint8 packed Morgan bits; an unparsable SMILES gives all zeros."""
    return fingerprints_and_sizes(smiles, radius, n_bits)[0]


def _words(packed: np.ndarray) -> np.ndarray:
    """(n, n_bytes) uint8 -> (n, n_bytes / 8) uint64 view for fast popcounts."""
    return np.ascontiguousarray(packed).view(np.uint64)


def tanimoto_max(
    queries: np.ndarray, reference: np.ndarray, exclude_self: bool = False
) -> np.ndarray:
    """Max Tanimoto similarity of each query to ``reference``.

    Shapes:
        queries: (q, n_bytes) uint8 packed bits; reference: (r, n_bytes) uint8.
        returns: (q,) float64 in [0, 1]; 0 for an empty query fingerprint.
        ``exclude_self``: queries *are* the reference (row i is not compared with itself).

    Intersections are exact integer counts either way: popcounts of AND-ed words for a few
    queries, a float32 matrix product of the unpacked bits for many (every partial sum is an
    integer below 2**24, so float32 holds it exactly; several times faster on BLAS).
    """
    q, r = _words(queries), _words(reference)
    q_count = np.bitwise_count(q).sum(1).astype(np.int64)
    r_count = np.bitwise_count(r).sum(1).astype(np.int64)
    if len(q) >= _GEMM_MIN_QUERIES and len(r):
        best = _tanimoto_max_gemm(queries, reference, q_count, r_count, exclude_self)
        return np.clip(best, 0.0, 1.0)
    out = np.zeros(len(q))
    for start in range(0, len(q), _CHUNK):
        block = q[start : start + _CHUNK]
        inter = np.bitwise_count(block[:, None, :] & r[None, :, :]).sum(2).astype(np.int64)
        sim = _similarity(inter, q_count[start : start + _CHUNK], r_count)
        if exclude_self:
            rows = np.arange(len(block))
            sim[rows, start + rows] = -1.0
        out[start : start + len(block)] = sim.max(1) if sim.shape[1] else 0.0
    return np.clip(out, 0.0, 1.0)


def _similarity(inter: np.ndarray, q_count: np.ndarray, r_count: np.ndarray) -> np.ndarray:
    """(q, r) Tanimoto from int64 intersections and the two sides' bit counts."""
    union = q_count[:, None] + r_count[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def _tanimoto_max_gemm(
    queries: np.ndarray,
    reference: np.ndarray,
    q_count: np.ndarray,
    r_count: np.ndarray,
    exclude_self: bool,
) -> np.ndarray:
    """:func:`tanimoto_max` for many queries: reference chunks of ``_GEMM_CHUNK`` rows
    unpacked to float32 and multiplied with all queries, a running max over the chunks."""
    bits = np.unpackbits(queries, axis=1).astype(np.float32)
    best = np.full(len(queries), -np.inf)
    for start in range(0, len(reference), _GEMM_CHUNK):
        chunk = np.unpackbits(reference[start : start + _GEMM_CHUNK], axis=1).astype(np.float32)
        inter = (bits @ chunk.T).astype(np.int64)
        sim = _similarity(inter, q_count, r_count[start : start + _GEMM_CHUNK])
        if exclude_self:
            rows = np.arange(start, min(start + _GEMM_CHUNK, len(queries)))
            sim[rows, rows - start] = -1.0
        np.maximum(best, sim.max(1), out=best)
    return best


@dataclass(frozen=True)
class ApplicabilityDomain:
    """Training-set fingerprints, the similarity threshold and the heavy-atom range.

    Shapes:
        fingerprints: (n_train, n_bits / 8) uint8 packed Morgan bits.
    ``heavy_atoms``: (min, max) heavy atoms of the training molecules, inclusive; None for a
    domain file written before the range was stored (then size is not checked).
    ``elements``: the element symbols of the training molecules, sorted; None for a domain
    file written before they were stored.
    """

    fingerprints: np.ndarray
    threshold: float
    radius: int = RADIUS
    n_bits: int = N_BITS
    percentile: float = PERCENTILE
    heavy_atoms: tuple[int, int] | None = None
    elements: tuple[str, ...] | None = None

    @classmethod
    def fit(
        cls, train_smiles: Sequence[str], percentile: float = PERCENTILE
    ) -> ApplicabilityDomain:
        """Fingerprint the training set and calibrate the threshold (see module docstring)."""
        elements: set[str] = set()
        fps, heavy = fingerprints_and_sizes(train_smiles, elements=elements)
        if len(fps) < 2:
            raise ArtifactError("the applicability domain needs at least 2 training molecules")
        parsed = heavy[heavy >= 0]
        if len(parsed) == 0:
            raise ArtifactError("no training SMILES of the applicability domain could be parsed")
        loo = tanimoto_max(fps, fps, exclude_self=True)
        return cls(
            fps,
            float(np.percentile(loo, percentile)),
            percentile=percentile,
            heavy_atoms=(int(parsed.min()), int(parsed.max())),
            elements=tuple(sorted(elements)),
        )

    def similarity(self, smiles: Sequence[str]) -> np.ndarray:
        """(n,) max Tanimoto similarity of each SMILES to the training set (0 if unparsable)."""
        return tanimoto_max(fingerprint_bits(smiles, self.radius, self.n_bits), self.fingerprints)

    def in_domain(self, smiles: Sequence[str]) -> np.ndarray:
        """(n,) bool: similarity >= threshold and heavy atoms within the training range (the
        range is skipped for old domain files without one)."""
        return self.assess(smiles)[1]

    def assess(
        self, smiles: Sequence[str], graphs: Sequence[object] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """((n,) max Tanimoto similarity to the training set (0 if unparsable), (n,) bool
        ``in_domain``) from one fingerprinting pass. ``graphs``: the rows' featurised graphs
        (or their exceptions), one per SMILES: a graph carrying its molecule's fingerprint
        (2D featuriser) is not parsed again."""
        fps, heavy = self._fingerprints(smiles, graphs)
        similarity = tanimoto_max(fps, self.fingerprints)
        ok = similarity >= self.threshold
        if self.heavy_atoms is not None:
            low, high = self.heavy_atoms
            ok &= (heavy >= low) & (heavy <= high)
        return similarity, ok

    def _fingerprints(
        self, smiles: Sequence[str], graphs: Sequence[Any] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`fingerprints_and_sizes` of ``smiles``, taken from ``graphs`` where a graph
        has them (and this domain uses the featuriser's fingerprint), parsed otherwise."""
        if graphs is not None and len(graphs) != len(smiles):
            raise ValueError(f"{len(graphs)} graphs for {len(smiles)} SMILES")
        carried = (
            [getattr(g, "fingerprint", None) is not None for g in graphs]
            if graphs is not None and (self.radius, self.n_bits) == (RADIUS, N_BITS)
            else [False] * len(smiles)
        )
        rest = [i for i, c in enumerate(carried) if not c]
        fps, heavy = fingerprints_and_sizes([smiles[i] for i in rest], self.radius, self.n_bits)
        if len(rest) == len(smiles):
            return fps, heavy
        out = np.zeros((len(smiles), self.n_bits // 8), dtype=np.uint8)
        sizes = np.full(len(smiles), -1, dtype=np.int64)
        out[rest], sizes[rest] = fps, heavy
        assert graphs is not None  # some graph carried its fingerprint
        for i, c in enumerate(carried):
            if c:
                out[i], sizes[i] = graphs[i].fingerprint, graphs[i].heavy_atoms
        return out, sizes

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / DOMAIN_NAME
        meta = {
            "radius": str(self.radius),
            "n_bits": str(self.n_bits),
            "threshold": repr(self.threshold),
            "percentile": repr(self.percentile),
            "n_train": str(len(self.fingerprints)),
            "metric": "max_tanimoto_morgan",
        }
        if self.heavy_atoms is not None:
            meta["heavy_atoms_min"], meta["heavy_atoms_max"] = map(str, self.heavy_atoms)
        if self.elements is not None:
            meta["elements"] = ",".join(self.elements)
        save_file({"fingerprints": np.ascontiguousarray(self.fingerprints)}, str(path), meta)
        path.chmod(0o644)  # safetensors creates 0600; the service may run as another user
        return path

    @classmethod
    def load(cls, directory: str | Path) -> ApplicabilityDomain | None:
        """The artifact's domain, or None when it has no ``domain.safetensors``."""
        path = artifact_file(directory, DOMAIN_NAME)
        if not path.exists():
            return None
        try:
            with safe_open(str(path), framework="numpy") as handle:
                meta = handle.metadata() or {}
            fps = load_file(str(path))["fingerprints"]
            heavy = None
            if "heavy_atoms_min" in meta and "heavy_atoms_max" in meta:
                heavy = (int(meta["heavy_atoms_min"]), int(meta["heavy_atoms_max"]))
            else:
                log.info(
                    "%s has no heavy-atom range (written by an older molprop): in_domain "
                    "uses the similarity criterion only; refit it with "
                    "add_domain_to_artifact",
                    path,
                )
            elements = None
            if "elements" in meta:
                elements = tuple(e for e in meta["elements"].split(",") if e)
            threshold = float(meta["threshold"])
            if not 0.0 <= threshold <= 1.0:  # NaN too
                raise ValueError(f"threshold {meta['threshold']!r} is not a similarity in [0, 1]")
            return cls(
                fps.astype(np.uint8),
                threshold,
                int(meta["radius"]),
                int(meta["n_bits"]),
                float(meta.get("percentile", PERCENTILE)),
                heavy,
                elements,
            )
        except (KeyError, ValueError, OSError, SafetensorError) as exc:
            raise ArtifactError(f"corrupt applicability domain {path}: {exc}") from exc


def add_domain_to_artifact(
    directory: str | Path, train_smiles: Sequence[str] | None = None
) -> Path:
    """Write ``domain.safetensors`` into an existing artifact.

    The training molecules are ``train_smiles`` or, by default, the ``train`` rows of the
    artifact's ``split.csv`` (written by ``molprop train``).
    """
    directory = Path(directory)
    if train_smiles is None:
        split = read_split(directory)
        if split is None:
            raise ArtifactError(f"no {SPLIT_NAME} in {directory}: pass the training SMILES")
        train_smiles = split.loc[split["split"] == "train", "smiles"].tolist()
    domain = ApplicabilityDomain.fit(list(train_smiles))
    log.info(
        "applicability domain of %s: %d training molecules, threshold %.3f, heavy atoms %s, "
        "elements %s",
        directory,
        len(domain.fingerprints),
        domain.threshold,
        domain.heavy_atoms,
        ",".join(domain.elements or ()),
    )
    return domain.save(directory)
