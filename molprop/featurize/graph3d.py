"""3D featuriser: coordinates (conformer, structure file, ase / pymatgen object) -> radius graph.

Graph (see ``molprop.featurize.radius``): directed edges to every atom within ``cutoff``
(default 5.0 Å for molecules, 6.0 Å for periodic systems), capped at the ``max_neighbors``
nearest per atom (default 12, ties kept). Periodic edges carry their Cartesian image shift in
``MolGraph.edge_vec_shift`` so distances are exact.

Edge features (``edge_dim = num_gaussians``): ``num_gaussians`` (default 32) Gaussians on
``linspace(0, cutoff)`` of width ``gaussian_width`` (default: the grid spacing) times a cosine
cutoff (``molprop.featurize.gaussian``). ESA edge tokens are then ``[h_i | h_j | rbf(d_ij)]``.

Node features, in this order:
  * element one-hot over :data:`ELEMENTS_3D` (Z = 1..94) plus an "other" slot;
  * ``tags=True``: OC20 tag one-hot (0 sub-surface, 1 surface, 2 adsorbate) + "other/unknown"
    (read from the ``tags`` or ``tags_heuristic`` array);
  * ``fixed=True``: 1.0 for atoms fixed in the relaxation (``fixed`` array / FixAtoms);
  * ``atom_gaussians=True``: the paper's per-atom sum of the Gaussian features over all other
    atoms within the cutoff (uncapped) - the way NSA, whose tokens are atoms, sees distances.

SMILES go through ``molprop.chem.conformers`` (ETKDGv3 + MMFF, ``seed``); a molecule that
cannot be embedded is an ``InvalidInputError`` for its row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from molprop.chem.conformers import embed_molecule
from molprop.chem.structures import Structure3D, to_structure
from molprop.errors import ConfigError, InvalidInputError
from molprop.featurize import register_featurizer
from molprop.featurize.atoms import one_hot
from molprop.featurize.gaussian import gaussian_basis
from molprop.featurize.radius import (
    NeighborList,
    cap_neighbors,
    molecule_neighbors,
    periodic_neighbors,
)
from molprop.graph import MolGraph

log = logging.getLogger(__name__)

#: Atomic numbers with their own one-hot slot (H .. Pu); anything else goes to "other".
ELEMENTS_3D: tuple[int, ...] = tuple(range(1, 95))
#: OC20 tags: 0 sub-surface slab, 1 surface slab, 2 adsorbate.
OC20_TAGS: tuple[int, ...] = (0, 1, 2)
DEFAULT_CUTOFF_MOLECULE = 5.0
DEFAULT_CUTOFF_PERIODIC = 6.0


@dataclass(frozen=True)
class Graph3DFeaturizer:
    """Radius-graph featuriser for molecules and periodic systems (parameters: module doc).

    ``cutoff=None`` means 5.0 Å for molecules and 6.0 Å for periodic systems; the Gaussian
    grid always spans the cutoff actually used.
    """

    cutoff: float | None = None
    max_neighbors: int | None = 12
    num_gaussians: int = 32
    gaussian_width: float | None = None
    include_h: bool = True
    tags: bool = False
    fixed: bool = False
    atom_gaussians: bool = False
    seed: int = 0
    mmff: bool = True
    kind: str = "3d"

    def __post_init__(self) -> None:
        if self.cutoff is not None and self.cutoff <= 0:
            raise ConfigError(f"cutoff must be positive, got {self.cutoff}")
        if self.num_gaussians < 2:
            raise ConfigError(f"num_gaussians must be >= 2, got {self.num_gaussians}")
        if self.max_neighbors is not None and self.max_neighbors < 1:
            raise ConfigError(f"max_neighbors must be >= 1 or null, got {self.max_neighbors}")

    # ----------------------------------------------------------------- dimensions
    @property
    def node_dim(self) -> int:
        return (
            len(ELEMENTS_3D)
            + 1
            + (len(OC20_TAGS) + 1 if self.tags else 0)
            + int(self.fixed)
            + (self.num_gaussians if self.atom_gaussians else 0)
        )

    @property
    def edge_dim(self) -> int:
        return self.num_gaussians

    def cutoff_for(self, structure: Structure3D) -> float:
        if self.cutoff is not None:
            return float(self.cutoff)
        return DEFAULT_CUTOFF_PERIODIC if structure.periodic else DEFAULT_CUTOFF_MOLECULE

    # ----------------------------------------------------------------- featurising
    def from_smiles(self, smiles: str) -> MolGraph:
        """SMILES -> seeded ETKDGv3/MMFF conformer -> graph (InvalidInputError on failure)."""
        conf = embed_molecule(smiles, seed=self.seed, mmff=self.mmff, include_h=self.include_h)
        return self(
            Structure3D(
                numbers=conf.numbers,
                pos=conf.pos,
                cell=np.zeros((3, 3)),
                pbc=np.zeros(3, dtype=bool),
            )
        )

    def from_structure(self, obj: Any) -> MolGraph:
        """ase.Atoms / pymatgen Molecule or Structure / RDKit mol with conformer -> graph."""
        return self(to_structure(obj))

    def neighbors(self, s: Structure3D, cap: bool = True) -> NeighborList:
        cutoff = self.cutoff_for(s)
        k = self.max_neighbors if cap else None
        if s.periodic:
            if abs(np.linalg.det(s.cell)) < 1e-8:
                raise InvalidInputError("periodic structure has a degenerate cell")
            return periodic_neighbors(s.pos, s.cell, s.pbc, cutoff, k)
        return molecule_neighbors(s.pos, cutoff, k)

    def __call__(self, structure: Structure3D) -> MolGraph:
        s = structure if self.include_h else _drop_hydrogens(structure)
        cutoff = self.cutoff_for(s)
        full = self.neighbors(s, cap=False)  # one neighbour search, capped below
        nl = cap_neighbors(full, self.max_neighbors)
        edge_attr = gaussian_basis(nl.dist, cutoff, self.num_gaussians, self.gaussian_width)
        parts = [np.asarray([one_hot(int(z), ELEMENTS_3D) for z in s.numbers])]
        if self.tags:
            tags = s.tags if s.tags is not None else np.full(s.n_atoms, -1)
            parts.append(np.asarray([one_hot(int(t), OC20_TAGS) for t in tags]))
        if self.fixed:
            fixed = s.fixed if s.fixed is not None else np.zeros(s.n_atoms, dtype=bool)
            parts.append(fixed.astype(np.float64)[:, None])
        if self.atom_gaussians:
            rbf = gaussian_basis(full.dist, cutoff, self.num_gaussians, self.gaussian_width)
            summed = [
                np.bincount(full.src, weights=rbf[:, k], minlength=s.n_atoms)
                for k in range(self.num_gaussians)
            ]
            parts.append(np.stack(summed, axis=1))
        x = np.concatenate(parts, axis=1).astype(np.float32)
        return MolGraph(
            x=x,
            edge_index=np.stack([nl.src, nl.dst]).astype(np.int64),
            edge_attr=edge_attr,
            pos=s.pos.astype(np.float32),
            edge_vec_shift=nl.shift.astype(np.float32) if s.periodic else None,
        )


def _drop_hydrogens(s: Structure3D) -> Structure3D:
    keep = s.numbers != 1
    if not keep.any():
        return s  # H2 keeps its hydrogens
    return Structure3D(
        numbers=s.numbers[keep],
        pos=s.pos[keep],
        cell=s.cell,
        pbc=s.pbc,
        tags=None if s.tags is None else s.tags[keep],
        fixed=None if s.fixed is None else s.fixed[keep],
        info=s.info,
    )


register_featurizer("3d", Graph3DFeaturizer)
