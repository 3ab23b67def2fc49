"""The featurised molecule: a numpy-only, immutable graph container."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MolGraph:
    """One molecule (or periodic system) as a graph. numpy only; torch comes at collation.

    Shapes:
        x: (n_nodes, node_dim) float32 node features.
        edge_index: (2, n_edges) int64, directed edges src -> dst (both directions present).
        edge_attr: (n_edges, edge_dim) float32 edge features.
        pos: optional (n_nodes, 3) float32 Cartesian coordinates (Å).
        edge_vec_shift: optional (n_edges, 3) float32 Cartesian image shift for periodic edges,
            so that ``pos[dst] + shift - pos[src]`` is the true bond vector.
        z: optional (n_nodes,) int64 atomic numbers (3D featurisers; read by the model's
            element-pair Gaussians).
        fingerprint: optional (N_BITS / 8,) uint8 packed Morgan bits (radius 2, 2048 bits,
            :mod:`molprop.chem.fingerprints`) of the parsed molecule, and ``heavy_atoms`` its
            heavy-atom count (2D featuriser): read by the applicability domain instead of
            parsing the SMILES again; not model inputs.
        smiles: optional SMILES the graph was built from after the chemistry checks
            (:mod:`molprop.chem.standardize`; set at prediction, the output's
            ``standardized_smiles``), or for a structure the SMILES of the molecule perceived
            from its coordinates (3D featuriser, mode ``bonds``; the applicability domain reads
            it); not a model input.
        n_atoms: number of atoms (equals n_nodes).
    """

    x: np.ndarray
    edge_index: np.ndarray
    edge_attr: np.ndarray
    pos: np.ndarray | None = None
    edge_vec_shift: np.ndarray | None = None
    z: np.ndarray | None = None
    fingerprint: np.ndarray | None = None
    heavy_atoms: int | None = None
    smiles: str | None = None

    def __post_init__(self) -> None:
        if self.x.ndim != 2:
            raise ValueError(f"x must be 2-D, got shape {self.x.shape}")
        if self.edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must be (2, E), got {self.edge_index.shape}")
        if self.edge_attr.shape[0] != self.edge_index.shape[1]:
            raise ValueError("edge_attr and edge_index disagree on the number of edges")

    @property
    def n_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edge_index.shape[1])
