"""Radius graphs: neighbours within a cutoff, for molecules and for periodic cells.

Molecules use an exact O(n^2) distance matrix (n <= a few hundred atoms). Periodic systems
(any ``pbc`` true) use :func:`ase.neighborlist.primitive_neighbor_list`: ASE is already our structure I/O
library, its neighbour list is a compiled-free, well-tested binning code that handles triclinic
cells, mixed PBC and cutoffs larger than the cell, and it returns the integer image offset ``S``
of every pair, so distances are exact: ``d_ij = |pos[j] + S @ cell - pos[i]|``.

Edges are directed ``src -> dst`` (both directions are present before capping). With
``max_neighbors`` every atom keeps its nearest neighbours only; neighbours *tied* with the
k-th distance (within 1e-4 Å) are all kept, so the graph does not depend on atom order or on
which of several symmetry-equivalent images comes first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TIE_TOLERANCE = 1e-4


@dataclass(frozen=True)
class NeighborList:
    """Directed neighbour pairs.

    Shapes (E edges):
        src, dst: (E,) int64 atom indices; dist: (E,) float64 Å;
        shift: (E, 3) float64 Cartesian image shift, ``pos[dst] + shift - pos[src]`` is the
        bond vector (zeros for molecules); image: (E, 3) int64 cell offsets (zeros for molecules).
    """

    src: np.ndarray
    dst: np.ndarray
    dist: np.ndarray
    shift: np.ndarray
    image: np.ndarray

    def take(self, keep: np.ndarray) -> NeighborList:
        return NeighborList(self.src[keep], self.dst[keep], self.dist[keep], self.shift[keep],
                            self.image[keep])  # fmt: skip


def cap_neighbors(nl: NeighborList, max_neighbors: int | None) -> NeighborList:
    """Keep, for each ``src``, the edges within its ``max_neighbors``-th smallest distance
    (ties kept); edges are returned sorted by (src, dist, dst)."""
    order = np.lexsort((nl.image[:, 2], nl.image[:, 1], nl.image[:, 0], nl.dst, nl.dist, nl.src))
    nl = nl.take(order)
    if not max_neighbors or nl.src.size == 0:
        return nl
    starts = np.searchsorted(nl.src, nl.src, side="left")
    rank = np.arange(nl.src.size) - starts  # position within the atom's sorted list
    counts = np.bincount(nl.src, minlength=int(nl.src.max()) + 1)
    kth = np.where(counts[nl.src] > max_neighbors, starts + max_neighbors - 1, -1)
    limit = np.where(kth >= 0, nl.dist[np.maximum(kth, 0)], np.inf)
    keep = (rank < max_neighbors) | (nl.dist <= limit + TIE_TOLERANCE)
    return nl.take(keep)


def molecule_neighbors(
    pos: np.ndarray, cutoff: float, max_neighbors: int | None = None
) -> NeighborList:
    """All pairs i != j with |pos_j - pos_i| < cutoff; pos: (n, 3) Å."""
    pos = np.asarray(pos, dtype=np.float64)
    diff = pos[None, :, :] - pos[:, None, :]  # (n, n, 3): pos[j] - pos[i]
    dist = np.linalg.norm(diff, axis=-1)
    src, dst = np.nonzero((dist < cutoff) & ~np.eye(len(pos), dtype=bool))
    zeros = np.zeros((src.size, 3))
    nl = NeighborList(src.astype(np.int64), dst.astype(np.int64), dist[src, dst], zeros,
                      zeros.astype(np.int64))  # fmt: skip
    return cap_neighbors(nl, max_neighbors)


def periodic_neighbors(
    pos: np.ndarray,
    cell: np.ndarray,
    pbc: np.ndarray | tuple[bool, bool, bool],
    cutoff: float,
    max_neighbors: int | None = None,
) -> NeighborList:
    """Pairs (i, j, S) with |pos_j + S @ cell - pos_i| < cutoff across cell images.

    Shapes: pos (n, 3) Å, cell (3, 3) rows are lattice vectors (Å), pbc (3,) bool.
    An atom may neighbour its own images (i == j, S != 0).
    """
    from ase.neighborlist import primitive_neighbor_list

    i, j, d, s = primitive_neighbor_list(
        "ijdS", pbc=np.asarray(pbc, dtype=bool), cell=np.asarray(cell, dtype=np.float64),
        positions=np.asarray(pos, dtype=np.float64), cutoff=float(cutoff),
        self_interaction=False,
    )  # fmt: skip
    s = np.asarray(s, dtype=np.int64).reshape(-1, 3)
    shift = s @ np.asarray(cell, dtype=np.float64)
    nl = NeighborList(np.asarray(i, np.int64), np.asarray(j, np.int64),
                      np.asarray(d, np.float64), shift, s)  # fmt: skip
    return cap_neighbors(nl, max_neighbors)
