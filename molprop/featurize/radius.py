"""Radius graphs: neighbours within a cutoff, for molecules and for periodic cells.

Molecules use an exact O(n^2) distance matrix (n <= a few hundred atoms). Periodic systems
(any ``pbc`` true) return the integer image offset ``S`` of every pair, and every distance is
computed by one formula in float64, ``d_ij = |pos[j] + S @ cell - pos[i]|``. Small cells (at
most ``BRUTE_FORCE_PAIRS`` atom-pair x image candidates, e.g. every cell of the shipped oxides and
their supercells) are searched directly over all images that can reach the cutoff (vectorised,
4-15x faster than a binned list on the oxides); larger systems use
:func:`ase.neighborlist.primitive_neighbor_list` (ASE is our structure I/O library; its binned
list handles triclinic cells, mixed PBC and cutoffs larger than the cell).

Edges are directed ``src -> dst`` (both directions are present before capping). With
``max_neighbors`` every atom keeps its nearest neighbours only; neighbours *tied* with the
k-th distance (within 1e-4 Å) are all kept, so the graph does not depend on atom order or on
which of several symmetry-equivalent images comes first: every atom of a supercell keeps the
same neighbours (same bond vectors) as its atom in the cell. In a cell smaller than twice the
cutoff an atom can have several images of the same atom as neighbours; the attention masks
count them (``molprop.nn.edge_sets``, multiplicity), so no cell is too small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TIE_TOLERANCE = 1e-4
#: Periodic systems with at most this many (atom, atom, image) candidates are searched directly
#: (vectorised); larger ones use ASE's binned neighbour list. 2M candidates: ~70 MB of float64.
BRUTE_FORCE_PAIRS = 2_000_000


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
        return NeighborList(
            self.src[keep], self.dst[keep], self.dist[keep], self.shift[keep], self.image[keep]
        )


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
    nl = NeighborList(
        src.astype(np.int64), dst.astype(np.int64), dist[src, dst], zeros, zeros.astype(np.int64)
    )
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
    pos = np.asarray(pos, dtype=np.float64)
    cell = np.asarray(cell, dtype=np.float64)
    pbc = np.asarray(pbc, dtype=bool)
    reach = _image_reach(cell, pbc, cutoff)
    small = len(pos) ** 2 * float(np.prod(2.0 * reach + 1)) <= BRUTE_FORCE_PAIRS  # no overflow
    if small and abs(np.linalg.det(cell)) > 1e-8:
        i, j, s = _pairs_over_images(pos, cell, pbc, cutoff, reach)
    else:
        from ase.neighborlist import primitive_neighbor_list

        i, j, s = primitive_neighbor_list(
            "ijS", pbc=pbc, cell=cell, positions=pos, cutoff=float(cutoff), self_interaction=False
        )
    s = np.asarray(s, dtype=np.int64).reshape(-1, 3)
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    # row by row, the same arithmetic for every edge: equal images give bit-equal shifts
    shift = s[:, :1] * cell[0] + s[:, 1:2] * cell[1] + s[:, 2:] * cell[2]
    dist = np.linalg.norm(pos[j] + shift - pos[i], axis=1)  # one formula for every pair
    keep = dist < cutoff
    nl = NeighborList(i[keep], j[keep], dist[keep], shift[keep], s[keep])
    return cap_neighbors(nl, max_neighbors)


def _image_reach(cell: np.ndarray, pbc: np.ndarray, cutoff: float) -> np.ndarray:
    """(3,) int: cell offsets to search per axis for atoms wrapped into the cell, ceil(cutoff /
    height) along periodic axes (height: distance between the two cell faces), 0 otherwise."""
    volume = abs(np.linalg.det(cell))
    if volume <= 1e-8:  # degenerate cell: ASE decides
        return np.zeros(3, dtype=np.int64)
    areas = [np.linalg.norm(np.cross(cell[(k + 1) % 3], cell[(k + 2) % 3])) for k in range(3)]
    heights = np.asarray([volume / a if a > 0 else np.inf for a in areas])
    return np.where(pbc, np.ceil(cutoff / heights), 0).astype(np.int64)


def _pairs_over_images(
    pos: np.ndarray, cell: np.ndarray, pbc: np.ndarray, cutoff: float, reach: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (i, j, S) with |pos_j + S @ cell - pos_i| < cutoff (+ 1e-6, refined by the caller),
    by direct distances to all images within ``reach``: exact and vectorised (small cells,
    where binning neighbour lists spend their time in Python). Shapes: (P,), (P,), (P, 3)."""
    frac = np.linalg.solve(cell.T, pos.T).T
    wrap = np.where(pbc, np.floor(frac), 0.0)  # wrapped pos' = pos - wrap @ cell
    inside = pos - wrap @ cell
    images = np.stack(np.meshgrid(*(np.arange(-r, r + 1) for r in reach), indexing="ij"), -1)
    images = images.reshape(-1, 3)  # (M, 3)
    vec = inside[None, None, :, :] + (images @ cell)[:, None, None, :] - inside[None, :, None, :]
    m, i, j = np.nonzero(np.einsum("mijk,mijk->mij", vec, vec) < (cutoff + 1e-6) ** 2)
    s = images[m] + (wrap[i] - wrap[j]).astype(np.int64)  # image of j for the unwrapped pos
    not_self = (i != j) | s.any(axis=1)
    return i[not_self], j[not_self], s[not_self]
