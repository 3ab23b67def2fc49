"""Morgan fingerprints as packed bits: what the applicability domain compares.

One definition for the domain's training-set fingerprints (:mod:`molprop.artifact.domain`) and
for those the 2D featuriser attaches to each graph it makes (``MolGraph.fingerprint``), so a
prediction fingerprints the molecule it has already parsed instead of parsing its SMILES again.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator

#: the applicability domain's fingerprint: Morgan radius 2, 2048 bits
RADIUS, N_BITS = 2, 2048


@lru_cache(maxsize=8)
def _generator(radius: int, n_bits: int):
    return rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)


def morgan_bits(mol: Chem.Mol, radius: int = RADIUS, n_bits: int = N_BITS) -> np.ndarray:
    """(n_bits / 8,) uint8: ``mol``'s Morgan bits packed with ``numpy.packbits``."""
    return np.packbits(_generator(radius, n_bits).GetFingerprintAsNumPy(mol))
