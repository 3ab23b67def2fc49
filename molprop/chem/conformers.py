"""3D conformers from SMILES: RDKit ETKDGv3 embedding + MMFF94 relaxation, seeded.

A molecule that cannot be embedded raises :class:`InvalidInputError` naming the SMILES and the
reason (never a crash), so table readers and the predictor report it per row.

Limits (ETKDG's cost grows steeply with size; a 300-atom macrocycle does not finish), read from
the environment at each call:

* ``MOLPROP_CONFORMER_MAX_ATOMS`` (default 200): molecules with more heavy atoms are rejected
  before embedding, as ``invalid_input`` naming the limit.
* ``MOLPROP_CONFORMER_TIMEOUT`` (default 10, whole seconds, ``0`` = no limit): time allowed for
  the embedding attempts of one molecule together, enforced by RDKit's own
  ``EmbedParameters.timeout`` (checked between RDKit's iterations, so a run may overshoot by a
  few seconds, measured up to ~4 s at 200-300 heavy atoms). Over it: ``invalid_input`` naming
  the limit. MMFF relaxation is bounded separately by its iteration cap (500).
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass

import numpy as np
from rdkit import Chem
from rdkit.Chem import AllChem

from molprop.chem.smiles import parse_smiles
from molprop.errors import ConfigError, InvalidInputError

log = logging.getLogger(__name__)

DEFAULT_MAX_ATOMS = 200
DEFAULT_TIMEOUT_S = 10
MMFF_MAX_ITERS = 500


@dataclass(frozen=True)
class Conformer:
    """One embedded molecule. Shapes: numbers (n,) int atomic numbers; pos (n, 3) Å."""

    numbers: np.ndarray
    pos: np.ndarray
    mol: Chem.Mol


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must be >= 0, got {value}")
    return value


def conformer_limits() -> tuple[int, int]:
    """-> (max heavy atoms, timeout in whole seconds; 0 = none) from the environment."""
    max_atoms = _env_int("MOLPROP_CONFORMER_MAX_ATOMS", DEFAULT_MAX_ATOMS)
    if max_atoms < 1:
        raise ConfigError("MOLPROP_CONFORMER_MAX_ATOMS must be >= 1")
    return max_atoms, _env_int("MOLPROP_CONFORMER_TIMEOUT", DEFAULT_TIMEOUT_S)


def embed_molecule(
    smiles: str,
    *,
    seed: int = 0,
    mmff: bool = True,
    max_attempts: int = 2,
    include_h: bool = True,
) -> Conformer:
    """SMILES -> explicit-H molecule with one ETKDGv3 conformer (MMFF-relaxed when possible).

    Atoms are embedded in RDKit's canonical order, so every way of writing a molecule gives
    the same conformer (the returned atoms are in that canonical order).

    ``max_attempts`` embeddings are tried (seeds ``seed``, ``seed + 1``, ...), the second with
    random initial coordinates, all within ``MOLPROP_CONFORMER_TIMEOUT`` seconds; molecules
    over ``MOLPROP_CONFORMER_MAX_ATOMS`` heavy atoms are rejected (module docstring). MMFF
    relaxation is skipped (with a debug log) for molecules MMFF has no parameters for.
    ``include_h=False`` drops the hydrogens after embedding.
    """
    max_atoms, timeout = conformer_limits()
    heavy = parse_smiles(smiles)
    # canonical atom and bond order first: ETKDG's result depends on the order, and the same
    # molecule written another way must get the same conformer (same molecule, same answer)
    heavy = Chem.MolFromSmiles(Chem.MolToSmiles(heavy)) or heavy
    if heavy.GetNumHeavyAtoms() > max_atoms:
        raise InvalidInputError(
            f"SMILES {smiles!r}: {heavy.GetNumHeavyAtoms()} heavy atoms, more than the "
            f"{max_atoms} allowed for 3D embedding (MOLPROP_CONFORMER_MAX_ATOMS)"
        )
    mol = Chem.AddHs(heavy)
    status = -1
    deadline = time.monotonic() + timeout if timeout else None
    timed_out = False
    for attempt in range(max_attempts):
        params = AllChem.ETKDGv3()
        params.randomSeed = int(seed) + attempt
        params.useRandomCoords = attempt > 0
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            params.timeout = max(1, math.ceil(left))  # RDKit takes whole seconds
        status = AllChem.EmbedMolecule(mol, params)
        if status == 0:
            break
        timed_out = deadline is not None and time.monotonic() >= deadline
        if timed_out:
            break
    if status != 0 or mol.GetNumConformers() == 0:
        if timed_out:
            raise InvalidInputError(
                f"SMILES {smiles!r}: RDKit ETKDGv3 did not embed a 3D conformer within the "
                f"{timeout} s limit (MOLPROP_CONFORMER_TIMEOUT)"
            )
        raise InvalidInputError(
            f"SMILES {smiles!r}: RDKit ETKDGv3 could not embed a 3D conformer "
            f"({max_attempts} attempts, seed {seed})"
        )
    if mmff and AllChem.MMFFHasAllMoleculeParams(mol):
        try:
            AllChem.MMFFOptimizeMolecule(mol, maxIters=MMFF_MAX_ITERS)
        except Exception as exc:  # RDKit raises RuntimeError on force-field setup failure
            log.debug("MMFF relaxation skipped for %s: %s", smiles, exc)
    if not include_h:
        mol = Chem.RemoveHs(mol)
    pos = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    if not np.all(np.isfinite(pos)):
        raise InvalidInputError(f"SMILES {smiles!r}: embedded coordinates are not finite")
    numbers = np.asarray([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    return Conformer(numbers=numbers, pos=pos, mol=mol)
