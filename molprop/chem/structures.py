"""Structure inputs for the 3D path: files (SDF/MOL, XYZ/extxyz, gzip too) and Python objects
(``ase.Atoms``, pymatgen ``Molecule`` / ``Structure``), all normalised to :class:`Structure3D`.

extxyz per-frame ``info`` keys (and SDF ``<properties>``) become the record's columns, so
``--target-columns energy_dft_total_eV`` reads that key of every frame.
"""

from __future__ import annotations

import bz2
import gzip
import logging
import lzma
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

import numpy as np

from molprop.errors import DataError, InvalidInputError

log = logging.getLogger(__name__)

#: File endings read as structure files (optionally followed by ``.gz``).
STRUCTURE_SUFFIXES = (".xyz", ".extxyz", ".sdf", ".mol", ".traj", ".cif", ".json", ".db")
_DECOMPRESSORS: dict[str, Callable[..., Any]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".xz": lzma.open,
}


@dataclass(frozen=True)
class Structure3D:
    """One molecule / periodic system.

    Shapes: numbers (n,) int atomic numbers; pos (n, 3) Å; cell (3, 3) Å rows = lattice vectors
    (zeros without a cell); pbc (3,) bool; tags (n,) int or None (OC20: 0 sub-surface,
    1 surface, 2 adsorbate); fixed (n,) bool or None; info: per-record scalar properties.
    """

    numbers: np.ndarray
    pos: np.ndarray
    cell: np.ndarray
    pbc: np.ndarray
    tags: np.ndarray | None = None
    fixed: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def periodic(self) -> bool:
        return bool(np.any(self.pbc))

    @property
    def n_atoms(self) -> int:
        return int(self.numbers.shape[0])

    def label(self) -> str:
        """A text identifier: the record's SMILES if it has one, else its formula."""
        for key in ("smiles", "SMILES"):
            if key in self.info:
                return str(self.info[key])
        from ase.data import chemical_symbols
        from ase.formula import Formula

        return str(Formula("".join(chemical_symbols[z] for z in self.numbers)).format("hill"))


def is_structure_path(path: object) -> TypeGuard[str | Path]:
    """True for a path whose ending names a structure format (``.extxyz.gz``, ``.sdf``, ...)."""
    if not isinstance(path, str | Path):
        return False
    name = str(path).lower().removesuffix(".gz")
    return name.endswith(STRUCTURE_SUFFIXES)


def from_ase(atoms: Any) -> Structure3D:
    """``ase.Atoms`` -> :class:`Structure3D` (tags from ``atoms.get_tags()`` or the
    ``tags`` / ``tags_heuristic`` arrays; fixed from ``fixed`` array or FixAtoms constraints)."""
    n = len(atoms)
    if n == 0:
        raise InvalidInputError("structure has no atoms")
    tags = None
    for key in ("tags", "tags_heuristic"):
        if key in atoms.arrays:
            tags = np.asarray(atoms.arrays[key], dtype=np.int64)
            break
    fixed = None
    if "fixed" in atoms.arrays:
        fixed = np.asarray(atoms.arrays["fixed"]).astype(bool).reshape(n)
    elif atoms.constraints:
        from ase.constraints import FixAtoms

        fixed = np.zeros(n, dtype=bool)
        for c in atoms.constraints:
            if isinstance(c, FixAtoms):
                fixed[c.get_indices()] = True
    pos = np.asarray(atoms.get_positions(), dtype=np.float64)
    if not np.all(np.isfinite(pos)):
        raise InvalidInputError("structure has non-finite coordinates")
    info = {k: v for k, v in atoms.info.items() if np.isscalar(v) or isinstance(v, str)}
    return Structure3D(
        numbers=np.asarray(atoms.get_atomic_numbers(), dtype=np.int64),
        pos=pos,
        cell=np.asarray(atoms.cell.array, dtype=np.float64),
        pbc=np.asarray(atoms.pbc, bool),
        tags=tags,
        fixed=fixed,
        info=info,
    )


def from_pymatgen(obj: Any) -> Structure3D:
    """pymatgen ``Molecule`` or ``Structure`` -> :class:`Structure3D` (via ASE's adaptor)."""
    from pymatgen.io.ase import AseAtomsAdaptor

    atoms = AseAtomsAdaptor.get_atoms(obj)
    if "tags" in getattr(obj, "site_properties", {}):
        atoms.set_tags(np.asarray(obj.site_properties["tags"], dtype=int))
    return from_ase(atoms)


def from_rdkit(mol: Any, info: dict[str, Any] | None = None) -> Structure3D:
    """RDKit molecule with a conformer (e.g. from SDF) -> :class:`Structure3D` (no cell)."""
    if mol.GetNumConformers() == 0:
        raise InvalidInputError("molecule has no 3D coordinates")
    conformer = mol.GetConformer()
    if not conformer.Is3D() and mol.GetNumAtoms() >= 3:
        # a 2D drawing (molblock flagged 2D, or every z zero): distances would be wrong
        raise InvalidInputError(
            "molecule has 2D (drawing) coordinates, not a 3D structure; give 3D coordinates "
            "or a SMILES (a conformer is then embedded)"
        )
    pos = np.asarray(conformer.GetPositions(), dtype=np.float64)
    numbers = np.asarray([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    if numbers.size == 0:
        raise InvalidInputError("molecule has no atoms")
    return Structure3D(
        numbers=numbers,
        pos=pos,
        cell=np.zeros((3, 3)),
        pbc=np.zeros(3, dtype=bool),
        info=dict(info or {}),
    )


def to_structure(obj: Any) -> Structure3D:
    """Any supported in-memory object -> :class:`Structure3D`."""
    if isinstance(obj, Structure3D):
        return obj
    if hasattr(obj, "get_atomic_numbers") and hasattr(obj, "pbc"):
        return from_ase(obj)
    if type(obj).__module__.startswith("pymatgen"):
        return from_pymatgen(obj)
    if hasattr(obj, "GetConformer"):
        return from_rdkit(obj)
    raise InvalidInputError(f"cannot read a structure from a {type(obj).__name__}")


@dataclass(frozen=True)
class SDFRecord:
    """One record of an SDF file, in file order (``index`` counts from 0).

    ``mol`` is the sanitised RDKit molecule (with its conformer and properties), or None when
    RDKit could not read the record; ``error`` then says so, naming the record."""

    index: int
    mol: Any | None
    error: InvalidInputError | None = None

    @property
    def name(self) -> str:
        """The record's title line (``_Name``), "" without one."""
        if self.mol is None or not self.mol.HasProp("_Name"):
            return ""
        return self.mol.GetProp("_Name")

    def properties(self) -> dict[str, str]:
        """The record's ``> <name>`` data fields as written (text); {} for an unread record."""
        if self.mol is None:
            return {}
        return {k: self.mol.GetProp(k) for k in self.mol.GetPropNames()}


def open_binary(path: str | Path) -> BinaryIO:
    """``path`` for reading bytes, decompressed when its name ends in ``.gz``, ``.bz2`` or
    ``.xz``."""
    opener = _DECOMPRESSORS.get(Path(path).suffix.lower(), open)
    return opener(path, "rb")


def sdf_record_texts(handle: BinaryIO) -> Iterator[bytes]:
    """The records of an SDF stream as bytes, each up to and including its ``$$$$`` line, in
    order. The file is cut at the ``$$$$`` lines here, not by the molecule parser, so that a
    broken record (e.g. three lines of garbage) ends at its own ``$$$$`` and cannot swallow the
    record after it. Text after the last ``$$$$`` is a last record unless it is blank (a MOL
    file without ``$$$$`` is one record)."""
    lines: list[bytes] = []
    for line in handle:
        lines.append(line)
        if line.rstrip(b"\r\n").rstrip() == b"$$$$":
            yield b"".join(lines)
            lines = []
    if b"".join(lines).strip():
        yield b"".join(lines)


def _parse_sdf_record(text: bytes, remove_hs: bool) -> Any | None:
    """One record's molecule with its properties (RDKit), or None when RDKit cannot read it."""
    import io

    from rdkit import Chem

    supplier = Chem.ForwardSDMolSupplier(io.BytesIO(text), sanitize=True, removeHs=remove_hs)
    try:
        return next(supplier, None)
    except Exception:  # noqa: BLE001 - RDKit raises for some malformed blocks: that row's error
        return None


def iter_sdf_records(path: str | Path, *, remove_hs: bool = False) -> Iterator[SDFRecord]:
    """Every record of an SDF / MOL file (``.gz`` too), streamed, in order; the one place that
    parses SDF records. ``remove_hs``: drop explicit hydrogens when reading (RDKit's
    ``removeHs``; the SMILES view of a file), else keep them (3D coordinates). One
    :class:`SDFRecord` per ``$$$$``-terminated record (:func:`sdf_record_texts`): a record
    RDKit cannot read is one with ``mol=None`` and the reason (naming the record by its
    0-based index, as the output's rows are numbered, and quoting its first line), never
    skipped, and the records after it are read as written."""
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")  # an unreadable record is reported per row instead
    with open_binary(path) as handle:
        for index, text in enumerate(sdf_record_texts(handle)):
            mol = _parse_sdf_record(text, remove_hs)
            if mol is None:
                reason = (
                    f"SDF record {index} of {path}: RDKit could not read the molecule "
                    f"(its first line: {_first_line(text)!r})"
                )
                yield SDFRecord(index, None, InvalidInputError(reason))
            else:
                yield SDFRecord(index, mol)


def _first_line(text: bytes) -> str:
    line = text.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line[:40] + ("..." if len(line) > 40 else "")


def _read_sdf(path: Path) -> list[Structure3D | InvalidInputError]:
    from rdkit import Chem

    out: list[Structure3D | InvalidInputError] = []
    for record in iter_sdf_records(path, remove_hs=False):
        if record.error is not None:
            out.append(record.error)
            continue
        mol = record.mol
        assert mol is not None  # a record without an error has its molecule
        info = mol.GetPropsAsDict()
        try:
            info.setdefault("smiles", Chem.MolToSmiles(Chem.RemoveHs(mol)))
        except Exception:  # noqa: BLE001 - a SMILES is only a label here
            pass
        try:
            out.append(from_rdkit(mol, info))
        except InvalidInputError as exc:
            out.append(InvalidInputError(f"SDF record {record.index} of {path}: {exc}"))
    return out


def read_ase_frames(path: Path, name: str) -> list[Any]:
    """All frames via ase.io. Gzipped (ext)xyz is decompressed in memory first: ASE's frame
    index seeks backwards, which re-decompresses a gzip stream each time (quadratic)."""
    import io

    import ase.io

    if name.endswith((".xyz", ".extxyz")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            text = io.StringIO(handle.read())
        frames = ase.io.read(text, index=":", format="extxyz")
    else:
        frames = ase.io.read(str(path), index=":")
    assert isinstance(frames, list)  # index=":" reads every frame, as a list
    return frames


def read_structures(path: str | Path) -> list[Structure3D | InvalidInputError]:
    """All records of a structure file, in order; a record that cannot be converted is an
    :class:`InvalidInputError` in its place (with the frame's ``info`` as its ``.info``
    attribute when there is one). A file that cannot be read raises DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"structure file not found: {path}")
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".sdf", ".mol")):
        records = _read_sdf(path)
    else:
        try:
            frames = read_ase_frames(path, name)
        except Exception as exc:  # ase raises many error types for malformed files
            raise DataError(f"could not read structures from {path}: {exc}") from exc
        records = []
        for i, atoms in enumerate(frames):
            try:
                records.append(from_ase(atoms))
            except InvalidInputError as exc:
                error = InvalidInputError(f"frame {i}: {exc}")
                error.info = dict(atoms.info)  # type: ignore[attr-defined]  # kept for output rows
                records.append(error)
    if not records:
        raise DataError(f"no structures in {path}")
    log.info("read %d structures from %s", len(records), path)
    return records
