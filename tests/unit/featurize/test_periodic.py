"""Periodic neighbour lists against a brute force over images, and supercell invariance of
per-atom predictions (size path off)."""

from __future__ import annotations

import itertools
from pathlib import Path

import ase.io
import numpy as np
import pytest

from molprop.chem.structures import Structure3D, from_ase
from molprop.featurize import radius
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.featurize.radius import periodic_neighbors
from molprop.models.config import ModelConfig, TaskConfig
from molprop.models.predict import predict_targets
from molprop.training.fit import build_model

DATA = Path(__file__).resolve().parents[3] / "data"


def _crystals() -> list[tuple[str, Structure3D]]:
    oxides = ase.io.read(DATA / "periodic" / "oxides.extxyz.gz", index=":1")
    elements = ase.io.read(DATA / "periodic" / "dcdft.json", index=":")
    slab = ase.io.read(DATA / "oc20" / "oc20_relax_initial_final.extxyz.gz", index="0")
    picked = [("oxide", oxides[0]), ("oc20_slab", slab)]
    picked += [(f"dcdft_{a.get_chemical_formula()}", a) for a in elements[:60:15]]
    return [(name, from_ase(a)) for name, a in picked]


CRYSTALS = _crystals()


def brute_force(s: Structure3D, cutoff: float) -> dict[tuple[int, int, int, int, int], float]:
    """Every (i, j, image) with 0 < |pos_j + image @ cell - pos_i| < cutoff, by looping over
    enough images: the image range covers the cutoff through each cell face."""
    cell = s.cell
    volume = abs(np.linalg.det(cell))
    heights = [
        volume / np.linalg.norm(np.cross(cell[(k + 1) % 3], cell[(k + 2) % 3])) for k in range(3)
    ]
    # positions may sit slightly outside the cell: one extra image each way
    reach = [int(np.ceil(cutoff / h)) + 1 if s.pbc[k] else 0 for k, h in enumerate(heights)]
    out = {}
    for image in itertools.product(*(range(-r, r + 1) for r in reach)):
        shifted = s.pos + np.asarray(image) @ cell  # (n, 3) images of every j
        d = np.linalg.norm(shifted[None, :, :] - s.pos[:, None, :], axis=-1)  # (i, j)
        for i, j in zip(*np.nonzero(d < cutoff), strict=True):
            if i == j and image == (0, 0, 0):
                continue
            out[(int(i), int(j), *image)] = float(d[i, j])
    return out


@pytest.mark.parametrize("search", ["direct", "ase"])
@pytest.mark.parametrize("name,structure", CRYSTALS, ids=[n for n, _ in CRYSTALS])
def test_neighbour_list_matches_brute_force(name, structure, search, monkeypatch):
    """Both searches (direct over images for small cells, ASE's binned list for large ones)."""
    monkeypatch.setattr(radius, "BRUTE_FORCE_PAIRS", 10**12 if search == "direct" else 0)
    cutoff = 6.0
    nl = periodic_neighbors(structure.pos, structure.cell, structure.pbc, cutoff)
    got = {
        (int(i), int(j), *map(int, s)): float(d)
        for i, j, s, d in zip(nl.src, nl.dst, nl.image, nl.dist, strict=True)
    }
    want = brute_force(structure, cutoff)
    assert len(want) > 0
    assert set(got) == set(want)
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), atol=1e-6)
    # distances from the carried Cartesian shift are exact
    vec = structure.pos[nl.dst] + nl.shift - structure.pos[nl.src]
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), nl.dist, atol=1e-6)


def _bonds(nl, pos: np.ndarray) -> list[tuple]:
    """Sorted (src, dst, bond vector on a 1e-6 Å grid) of a neighbour list."""
    vec = np.round(pos[nl.dst] + nl.shift - pos[nl.src], 6)
    return sorted(zip(nl.src.tolist(), nl.dst.tolist(), map(tuple, vec.tolist()), strict=True))


def test_atoms_outside_the_cell_keep_their_bond_vectors():
    """Moving atoms by lattice vectors (unwrapped coordinates) changes the image offsets, not
    the neighbours: the same bond vectors, through the direct search and through ASE's."""
    _, s = CRYSTALS[0]
    moved = (
        s.pos
        + np.array([[2, -1, 0], [0, 0, 3], [-2, 1, 1]] * (s.n_atoms // 3 + 1))[: s.n_atoms] @ s.cell
    )
    for limit in (10**12, 0):
        radius.BRUTE_FORCE_PAIRS, saved = limit, radius.BRUTE_FORCE_PAIRS
        try:
            a = periodic_neighbors(s.pos, s.cell, s.pbc, 6.0, 12)
            b = periodic_neighbors(moved, s.cell, s.pbc, 6.0, 12)
        finally:
            radius.BRUTE_FORCE_PAIRS = saved
        assert _bonds(a, s.pos) == _bonds(b, moved)
        np.testing.assert_allclose(np.sort(a.dist), np.sort(b.dist), atol=1e-9)


def test_face_atoms_find_image_neighbours():
    _, slab = CRYSTALS[1]
    frac = np.linalg.solve(slab.cell.T, slab.pos.T).T
    face = int(np.argmin(np.minimum(frac[:, 0] % 1.0, 1 - frac[:, 0] % 1.0)))
    g = Graph3DFeaturizer(max_neighbors=None)(slab)
    out_edges = g.edge_index[0] == face
    shifts = g.edge_vec_shift[out_edges]
    assert np.any(np.linalg.norm(shifts, axis=1) > 1.0)  # neighbours across the a-face
    # without PBC the same atom loses those neighbours
    flat = Structure3D(slab.numbers, slab.pos, slab.cell, np.zeros(3, bool))
    assert (
        Graph3DFeaturizer(max_neighbors=None, cutoff=6.0)(flat).edge_index[0] == face
    ).sum() < out_edges.sum()


def _supercell(s: Structure3D, reps: tuple[int, int, int]) -> Structure3D:
    import ase

    atoms = ase.Atoms(numbers=s.numbers, positions=s.pos, cell=s.cell, pbc=s.pbc, tags=s.tags)
    atoms.arrays["fixed"] = s.fixed.astype(int)
    return from_ase(atoms.repeat(reps))


@pytest.mark.parametrize("token_kind", ["nsa", "esa"])
def test_supercell_same_per_atom_and_four_times_total(token_kind):
    _, slab = CRYSTALS[1]
    # cutoff below half the shortest lattice vector: no atom pair is linked through two images,
    # so the 2x2x1 graph is an exact 4-fold cover of the cell graph (smaller cells are exact
    # through the masks' image multiplicities: tests/unit/models/test_invariance.py)
    feat = Graph3DFeaturizer(
        cutoff=4.0, max_neighbors=8, num_gaussians=16, tags=True, fixed=True, atom_gaussians=True
    )
    cell_graph, super_graph = feat(slab), feat(_supercell(slab, (2, 2, 1)))
    pairs = set(zip(*cell_graph.edge_index.tolist(), strict=True))
    assert len(pairs) == cell_graph.n_edges
    assert super_graph.n_nodes == 4 * cell_graph.n_nodes

    def totals(size_path: bool) -> np.ndarray:
        config = ModelConfig(
            node_dim=feat.node_dim,
            edge_dim=feat.edge_dim,
            n_tasks=1,
            token_kind=token_kind,
            hidden_dim=16,
            heads=2,
            layers="MSMP S",
            num_seeds=4,
            head_hidden=16,
            size_path=size_path,
        )
        task = TaskConfig(("energy",), scaler_mean=(-3.0,), scaler_std=(0.5,), per_atom=True)
        model = build_model(config, 0).eval()
        return predict_targets([model], [cell_graph, super_graph], task)[0, :, 0]

    cell_total, super_total = totals(size_path=False)
    assert super_total == pytest.approx(4 * cell_total, rel=1e-4)
    assert super_total / super_graph.n_nodes == pytest.approx(
        cell_total / cell_graph.n_nodes, rel=1e-4
    )
    # the size path (on by default for molecules) would break this invariance
    cell_total, super_total = totals(size_path=True)
    assert abs(super_total - 4 * cell_total) > 1e-3 * abs(cell_total)
