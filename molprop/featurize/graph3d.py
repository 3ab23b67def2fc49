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

Two modes (``mode``; featuriser version 3, :data:`molprop.featurize.FEATURIZER_VERSIONS`):

* ``"radius"`` (the only mode of version 2, unchanged): the radius graph and node features above.
* ``"bonds"`` (the default since version 3): a superset of the 2D featuriser. Tokens are
  the molecule's bonds (both directions), each ``[RDKit bond features | not-a-bond = 0 |
  rbf(d_ij)]``; nodes are ``[RDKit atom features | element one-hot | tags | fixed | per-atom
  Gaussian sums]`` (``atom_gaussians`` on by default; the sums run over *all* atoms within
  ``cutoff``, hydrogens included even when ``include_h`` is false). SMILES keep the bonds of
  the SMILES; structures without bonds (xyz, ASE, pymatgen, SDF) get them from RDKit
  ``rdDetermineBonds`` (``molprop.chem.perceive``: total charge from ``info["charge"]``, else 0;
  molecules over ``perceive_max_atoms`` atoms are not tried). ``radius_tokens`` R adds a token
  for every non-bonded pair of nodes closer than R Å, with zero bond features and the
  not-a-bond flag 1. Where bonds cannot be perceived (periodic systems, RDKit failure, size
  cap) the graph is the radius graph of ``cutoff`` / ``max_neighbors`` with every token
  flagged not-a-bond and atom features of bare atoms (degree 0); a molecule falls back with a
  warning naming it and the reason. ``include_h`` false gives the 2D heavy-atom graph (H
  counts as atom features); true keeps hydrogens as nodes with their bonds; None (the default
  since version 4) is the heavy-atom graph where bonds are known and all atoms on the
  radius-graph fallback (periodic systems need their hydrogens as nodes).

Every graph also carries the atomic number of each node (``MolGraph.z``), which the model's
element-pair-conditioned Gaussians (``ModelConfig.pair_rbf``) read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import numpy as np
from rdkit import Chem

from molprop.chem.conformers import embed_molecule
from molprop.chem.perceive import (
    DEFAULT_MAX_ATOMS,
    SOURCE_INDEX,
    BondPerceptionError,
    bare_atoms,
    perceive_bonds,
    perceived_smiles,
)
from molprop.chem.structures import Structure3D, to_structure
from molprop.errors import ConfigError, InvalidInputError
from molprop.featurize.atoms import atom_feature_dim, atom_feature_matrix, one_hot
from molprop.featurize.bonds import bond_feature_dim, bond_feature_matrix
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

#: ``radius``: radius graph, element nodes (version 2); ``bonds``: bond tokens + RDKit features.
Mode3D = Literal["radius", "bonds"]
MODES_3D: tuple[str, ...] = get_args(Mode3D)


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
    include_h: bool | None = None
    tags: bool = False
    fixed: bool = False
    atom_gaussians: bool = True
    seed: int = 0
    mmff: bool = True
    kind: str = "3d"
    mode: Mode3D = "bonds"
    radius_tokens: float | None = None
    perceive_max_atoms: int = DEFAULT_MAX_ATOMS

    def __post_init__(self) -> None:
        if self.mode not in MODES_3D:
            raise ConfigError(f"3D featurizer mode must be one of {MODES_3D}, got {self.mode!r}")
        if self.radius_tokens is not None and self.radius_tokens <= 0:
            raise ConfigError(f"radius_tokens must be positive or null, got {self.radius_tokens}")
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
            (atom_feature_dim() if self.mode == "bonds" else 0)
            + len(ELEMENTS_3D)
            + 1
            + (len(OC20_TAGS) + 1 if self.tags else 0)
            + int(self.fixed)
            + (self.num_gaussians if self.atom_gaussians else 0)
        )

    @property
    def edge_dim(self) -> int:
        bond_part = bond_feature_dim() + 1 if self.mode == "bonds" else 0  # + not-a-bond flag
        return bond_part + self.num_gaussians

    def hydrogen_nodes(self, bonded: bool) -> bool:
        """Whether hydrogens are nodes of a graph built from known bonds (``bonded``) or of a
        radius graph. ``include_h`` None (the default): no on bonded graphs (each heavy atom
        carries its hydrogen count, as in 2D), yes on radius graphs (periodic systems, failed
        perception, mode ``radius``), which have no other way to see them."""
        return (not bonded) if self.include_h is None else bool(self.include_h)

    def cutoff_for(self, structure: Structure3D) -> float:
        if self.cutoff is not None:
            return float(self.cutoff)
        return DEFAULT_CUTOFF_PERIODIC if structure.periodic else DEFAULT_CUTOFF_MOLECULE

    # ----------------------------------------------------------------- featurising
    def from_smiles(self, smiles: str) -> MolGraph:
        """SMILES -> seeded ETKDGv3/MMFF conformer -> graph (InvalidInputError on failure)."""
        if self.mode == "bonds":  # hydrogens embedded always (they enter the atom sums)
            conf = embed_molecule(smiles, seed=self.seed, mmff=self.mmff, include_h=True)
            return self._bonded(_structure(conf.numbers, conf.pos), conf.mol)
        conf = embed_molecule(
            smiles, seed=self.seed, mmff=self.mmff, include_h=self.hydrogen_nodes(bonded=False)
        )
        return self(_structure(conf.numbers, conf.pos))

    def from_structure(self, obj: Any) -> MolGraph:
        """ase.Atoms / pymatgen Molecule or Structure / RDKit mol with conformer -> graph."""
        return self(to_structure(obj))

    def perceive(self, s: Structure3D) -> Chem.Mol | None:
        """Bonds of ``s`` from its coordinates, or None (periodic; or RDKit failed / size cap,
        with a warning naming the structure and the reason)."""
        if s.periodic:
            return None
        try:
            charge = int(s.info.get("charge", 0) or 0)
            return perceive_bonds(s.numbers, s.pos, charge, self.perceive_max_atoms)
        except (BondPerceptionError, ValueError, TypeError) as exc:
            log.warning("%s: bonds not perceived (%s); radius-graph tokens only", s.label(), exc)
            return None

    def neighbors(self, s: Structure3D, cap: bool = True) -> NeighborList:
        cutoff = self.cutoff_for(s)
        k = self.max_neighbors if cap else None
        if s.periodic:
            if abs(np.linalg.det(s.cell)) < 1e-8:
                raise InvalidInputError("periodic structure has a degenerate cell")
            return periodic_neighbors(s.pos, s.cell, s.pbc, cutoff, k)
        return molecule_neighbors(s.pos, cutoff, k)

    def __call__(self, structure: Structure3D) -> MolGraph:
        if self.mode == "bonds":
            mol = self.perceive(structure)
            smiles = None if mol is None else perceived_smiles(mol)
            return replace(self._bonded(structure, mol), smiles=smiles)
        s = structure if self.hydrogen_nodes(bonded=False) else _drop_hydrogens(structure)
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
            z=s.numbers.astype(np.int64),
        )

    # ----------------------------------------------------------------- mode "bonds"
    def _extra_node_parts(self, s: Structure3D, nodes: np.ndarray) -> list[np.ndarray]:
        """Element one-hot, tags, fixed and per-atom Gaussian sums of the atoms ``nodes``
        (indices into ``s``; the sums run over all of ``s``'s atoms)."""
        parts = [np.asarray([one_hot(int(z), ELEMENTS_3D) for z in s.numbers[nodes]])]
        if self.tags:
            tags = s.tags if s.tags is not None else np.full(s.n_atoms, -1)
            parts.append(np.asarray([one_hot(int(t), OC20_TAGS) for t in tags[nodes]]))
        if self.fixed:
            fixed = s.fixed if s.fixed is not None else np.zeros(s.n_atoms, dtype=bool)
            parts.append(fixed[nodes].astype(np.float64)[:, None])
        if self.atom_gaussians:
            full = self.neighbors(s, cap=False)
            rbf = gaussian_basis(
                full.dist, self.cutoff_for(s), self.num_gaussians, self.gaussian_width
            )
            summed = np.stack(
                [
                    np.bincount(full.src, weights=rbf[:, k], minlength=s.n_atoms)
                    for k in range(self.num_gaussians)
                ],
                axis=1,
            )
            parts.append(summed[nodes])
        return parts

    def _bonded(self, s: Structure3D, mol: Chem.Mol | None) -> MolGraph:
        """Mode ``bonds``: ``mol`` holds the bonds of ``s`` (same atoms, same order), or None
        for the radius-graph fallback (module docstring)."""
        cutoff = self.cutoff_for(s)
        bond_dim = bond_feature_dim()
        if mol is None:  # radius-graph fallback: every token is "not a bond"
            keep = (
                np.arange(s.n_atoms)
                if self.hydrogen_nodes(bonded=False)
                else _heavy_indices(s.numbers)
            )
            sub = _take_atoms(s, keep)
            nl = cap_neighbors(self.neighbors(sub, cap=False), self.max_neighbors)
            src, dst, dist = nl.src, nl.dst, nl.dist
            bond_feats = np.zeros((len(src), bond_dim), dtype=np.float32)
            flag = np.ones(len(src), dtype=np.float32)
            atom_x = atom_feature_matrix(bare_atoms(sub.numbers, sub.pos))
            shift = nl.shift if s.periodic else None
        else:
            if self.hydrogen_nodes(bonded=True):
                node_mol, keep = mol, np.arange(s.n_atoms)
            else:
                for atom in mol.GetAtoms():  # the index survives RemoveAllHs
                    atom.SetIntProp(SOURCE_INDEX, atom.GetIdx())
                node_mol = (
                    Chem.RemoveAllHs(mol) if _heavy_indices(s.numbers).size < s.n_atoms else mol
                )
                keep = np.asarray(
                    [a.GetIntProp(SOURCE_INDEX) for a in node_mol.GetAtoms()], dtype=np.int64
                )
            pos = s.pos[keep]
            ends, feats = bond_feature_matrix(node_mol)
            ends = ends.reshape(-1, 2)
            pairs = np.stack([ends, ends[:, ::-1]], axis=1).reshape(-1, 2)  # bond k: edges 2k, 2k+1
            src, dst = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
            bond_feats = np.repeat(feats.reshape(-1, bond_dim), 2, axis=0).astype(np.float32)
            flag = np.zeros(len(src), dtype=np.float32)
            if self.radius_tokens is not None:
                near = molecule_neighbors(pos, float(self.radius_tokens), None)
                bonded = set(zip(src.tolist(), dst.tolist()))
                extra = np.asarray(
                    [(a, b) not in bonded for a, b in zip(near.src.tolist(), near.dst.tolist())],
                    dtype=bool,
                ).reshape(-1)
                src = np.concatenate([src, near.src[extra]]).astype(np.int64)
                dst = np.concatenate([dst, near.dst[extra]]).astype(np.int64)
                bond_feats = np.concatenate(
                    [bond_feats, np.zeros((int(extra.sum()), bond_dim), dtype=np.float32)]
                )
                flag = np.concatenate([flag, np.ones(int(extra.sum()), dtype=np.float32)])
            dist = np.linalg.norm(pos[dst] - pos[src], axis=1) if len(src) else np.zeros(0)
            atom_x = atom_feature_matrix(node_mol)
            shift = None
        rbf = gaussian_basis(dist, cutoff, self.num_gaussians, self.gaussian_width)
        edge_attr = np.concatenate([bond_feats, flag[:, None], rbf], axis=1).astype(np.float32)
        x = np.concatenate([atom_x, *self._extra_node_parts(s, keep)], axis=1).astype(np.float32)
        return MolGraph(
            x=x,
            edge_index=np.stack([src, dst]).astype(np.int64).reshape(2, -1),
            edge_attr=edge_attr,
            pos=s.pos[keep].astype(np.float32),
            edge_vec_shift=None if shift is None else shift.astype(np.float32),
            z=s.numbers[keep].astype(np.int64),
        )


def _structure(numbers: np.ndarray, pos: np.ndarray) -> Structure3D:
    return Structure3D(numbers=numbers, pos=pos, cell=np.zeros((3, 3)), pbc=np.zeros(3, dtype=bool))


def _heavy_indices(numbers: np.ndarray) -> np.ndarray:
    """Indices of the non-hydrogen atoms (all atoms for a molecule made only of hydrogens)."""
    heavy = np.flatnonzero(numbers != 1)
    return heavy if heavy.size else np.arange(len(numbers))


def _take_atoms(s: Structure3D, keep: np.ndarray) -> Structure3D:
    if keep.size == s.n_atoms:
        return s
    return Structure3D(
        numbers=s.numbers[keep],
        pos=s.pos[keep],
        cell=s.cell,
        pbc=s.pbc,
        tags=None if s.tags is None else s.tags[keep],
        fixed=None if s.fixed is None else s.fixed[keep],
        info=s.info,
    )


def _drop_hydrogens(s: Structure3D) -> Structure3D:
    return _take_atoms(s, _heavy_indices(s.numbers))  # H2 keeps its hydrogens
