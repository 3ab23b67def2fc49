"""3D conformers from SMILES: RDKit ETKDGv3 embedding + MMFF94 relaxation, seeded.

A molecule that cannot be embedded raises :class:`InvalidInputError` naming the SMILES and the
reason (never a crash), so table readers and the predictor report it per row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from rdkit import Chem
from rdkit.Chem import AllChem

from molprop.chem.smiles import parse_smiles
from molprop.errors import InvalidInputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Conformer:
    """One embedded molecule. Shapes: numbers (n,) int atomic numbers; pos (n, 3) Å."""

    numbers: np.ndarray
    pos: np.ndarray
    mol: Chem.Mol


def embed_molecule(
    smiles: str,
    *,
    seed: int = 0,
    mmff: bool = True,
    max_attempts: int = 2,
    include_h: bool = True,
) -> Conformer:
    """SMILES -> explicit-H molecule with one ETKDGv3 conformer (MMFF-relaxed when possible).

    ``max_attempts`` embeddings are tried (seeds ``seed``, ``seed + 1``, ...), the second with
    random initial coordinates. MMFF relaxation is skipped (with a debug log) for molecules MMFF
    has no parameters for. ``include_h=False`` drops the hydrogens after embedding.
    """
    mol = Chem.AddHs(parse_smiles(smiles))
    status = -1
    for attempt in range(max_attempts):
        params = AllChem.ETKDGv3()
        params.randomSeed = int(seed) + attempt
        params.useRandomCoords = attempt > 0
        status = AllChem.EmbedMolecule(mol, params)
        if status == 0:
            break
    if status != 0 or mol.GetNumConformers() == 0:
        raise InvalidInputError(
            f"SMILES {smiles!r}: RDKit ETKDGv3 could not embed a 3D conformer "
            f"({max_attempts} attempts, seed {seed})"
        )
    if mmff and AllChem.MMFFHasAllMoleculeParams(mol):
        try:
            AllChem.MMFFOptimizeMolecule(mol, maxIters=500)
        except Exception as exc:  # RDKit raises RuntimeError on force-field setup failure
            log.debug("MMFF relaxation skipped for %s: %s", smiles, exc)
    if not include_h:
        mol = Chem.RemoveHs(mol)
    pos = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    if not np.all(np.isfinite(pos)):
        raise InvalidInputError(f"SMILES {smiles!r}: embedded coordinates are not finite")
    numbers = np.asarray([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    return Conformer(numbers=numbers, pos=pos, mol=mol)
