"""Supercells of the shipped oxides (data/periodic/oxides.extxyz.gz): with the neighbour cap on,
every atom of a 2x2x1 supercell keeps the same neighbours (same cell atom, same bond vector) as
its atom in the cell, and the attention masks count each image of a neighbour exactly as the
infinite crystal does (``molprop.nn.edge_sets``: multiplicity)."""

from __future__ import annotations

import itertools
from pathlib import Path

import ase.io
import numpy as np
import pytest
import torch

from molprop.chem.structures import from_ase
from molprop.data import collate_graphs
from molprop.featurize import radius
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.nn.edge_sets import edge_token_set, node_token_set

DATA = Path(__file__).resolve().parents[3] / "data"
OXIDES = ase.io.read(DATA / "periodic" / "oxides.extxyz.gz", index=":")
FEATURIZER = Graph3DFeaturizer()  # 6 Å cutoff, cap of 12 neighbours (ties kept)


def edges_of(nl: radius.NeighborList, pos: np.ndarray) -> np.ndarray:
    """(E, 6) rows [src, dst, bond vector (3), distance]; pos[dst] + shift - pos[src] = vector."""
    vec = pos[nl.dst] + nl.shift - pos[nl.src]
    return np.column_stack([nl.src, nl.dst, vec, nl.dist])


def same_neighbours(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two edge tables are the same multiset: a one-to-one matching with equal
    (src, dst), bond vectors within 1e-6 Å and distances within 1e-8 Å (distinct neighbours of
    an atom are > 0.1 Å apart, so the matching is unique when it exists)."""
    if a.shape != b.shape:
        return False
    match = (a[:, None, 0] == b[None, :, 0]) & (a[:, None, 1] == b[None, :, 1])
    match &= np.abs(a[:, None, 2:5] - b[None, :, 2:5]).max(axis=-1) < 1e-6
    match &= np.abs(a[:, None, 5] - b[None, :, 5]) < 1e-8
    return bool((match.sum(axis=0) == 1).all() and (match.sum(axis=1) == 1).all())


def supercell_mismatches(frames, reps=(2, 2, 1)) -> list[str]:
    """Supercell copies whose capped neighbour lists differ from the cell's (as multisets of
    (cell atom, cell atom of the neighbour, bond vector, distance) per atom). ``ase.Atoms.repeat``
    lays the copies out as blocks of n atoms: supercell atom a is cell atom a % n of copy a // n."""
    bad = []
    for r, atoms in enumerate(frames):
        cell, sup = from_ase(atoms), from_ase(atoms.repeat(reps))
        n = len(atoms)
        want = edges_of(FEATURIZER.neighbors(cell), cell.pos)
        got = edges_of(FEATURIZER.neighbors(sup), sup.pos)
        copy = got[:, 0].astype(int) // n
        got[:, :2] %= n
        for c in range(int(np.prod(reps))):
            if not same_neighbours(got[copy == c], want):
                bad.append(f"row {r} copy {c}")
    return bad


def test_supercell_neighbours_equal_cell_neighbours_for_every_oxide():
    assert len(OXIDES) == 295
    assert supercell_mismatches(OXIDES) == []


def test_index_dependent_tie_break_is_caught(monkeypatch):
    """A cap that cuts at exactly k neighbours in (distance, atom index) order picks different
    equidistant neighbours in the supercell: the check above must see it."""
    monkeypatch.setattr(radius, "TIE_TOLERANCE", -np.inf)  # keep = rank < k only
    assert len(supercell_mismatches(OXIDES[:60])) > 10


def test_cap_keeps_ties_beyond_k():
    """The fluorite-like cells (3 atoms, 60 degree cell) have more than 12 equidistant
    neighbours at the cap distance: all are kept, none is chosen by index."""
    s = from_ase(OXIDES[40])
    nl = FEATURIZER.neighbors(s)
    full = FEATURIZER.neighbors(s, cap=False)
    per_atom = np.bincount(nl.src)
    assert per_atom.max() > 12
    for a in range(s.n_atoms):
        kept = np.sort(nl.dist[nl.src == a])
        dropped = np.setdiff1d(np.round(full.dist[full.src == a], 9), np.round(kept, 9))
        assert dropped.size == 0 or dropped.min() > kept.max() + radius.TIE_TOLERANCE


# ----------------------------------------------------------------- image multiplicities


def _images(nl: radius.NeighborList, s) -> np.ndarray:
    """Integer cell offsets of every edge (recovered from the Cartesian shift)."""
    return np.rint(np.linalg.solve(s.cell.T, nl.shift.T).T).astype(np.int64)


def brute_esa_multiplicity(src, dst, img) -> np.ndarray:
    """(L, L): for query edge q (at translate 0) and key edge k, the number of lattice
    translates U of k (searched over a box) that share an atom with q, q itself excluded.
    Atom instances (atom, cell offset) are compared as integer ids."""
    box = np.asarray(list(itertools.product(range(-4, 5), repeat=3)))  # (729, 3) translates U

    def instance(atom, offset):  # (atom, offset in [-8, 8]^3) -> unique integer
        offset = np.atleast_2d(offset) + 8
        return atom * 17**3 + offset[:, 0] * 17**2 + offset[:, 1] * 17 + offset[:, 2]

    L = len(src)
    out = np.zeros((L, L), dtype=np.int64)
    for q in range(L):
        q_atoms = np.concatenate([instance(src[q], np.zeros(3, int)), instance(dst[q], img[q])])
        for k in range(L):
            shares = np.isin(instance(src[k], box), q_atoms) | np.isin(
                instance(dst[k], box + img[k]), q_atoms
            )
            if k == q:
                shares &= box.any(axis=1)  # not the query edge itself
            out[q, k] = int(shares.sum())
    return out


@pytest.mark.parametrize("row", [0, 40, 120])  # 6-atom rutile, 3-atom fluorite, 6-atom rutile
def test_esa_and_nsa_multiplicity_match_the_infinite_crystal(row):
    feat = Graph3DFeaturizer(cutoff=4.5, max_neighbors=6)  # small graphs for the brute force
    s = from_ase(OXIDES[row])
    nl = feat.neighbors(s)
    img = _images(nl, s)
    graph = feat(s)
    esa = edge_token_set(collate_graphs([graph]))
    want = brute_esa_multiplicity(nl.src, nl.dst, img)
    got = esa.multiplicity[0].numpy() if esa.multiplicity is not None else esa.structure_mask[0]
    assert want.max() > 1  # the cell is smaller than twice the cutoff: images do repeat
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(esa.structure_mask[0].numpy(), want > 0)
    nsa = node_token_set(collate_graphs([graph]))
    pairs = np.zeros((s.n_atoms, s.n_atoms), dtype=np.int64)
    np.add.at(pairs, (nl.src, nl.dst), 1)  # one edge per image of dst
    np.testing.assert_array_equal(nsa.multiplicity[0].numpy(), pairs)


def test_large_cell_and_molecules_have_no_multiplicity():
    """Cells wider than twice the cutoff (and molecules) keep the plain boolean mask."""
    big = from_ase(OXIDES[0].repeat((3, 3, 4)))
    graph = Graph3DFeaturizer(cutoff=4.0)(big)
    assert edge_token_set(collate_graphs([graph])).multiplicity is None
    assert node_token_set(collate_graphs([graph])).multiplicity is None


def test_zero_shifts_give_the_molecular_masks():
    """Molecules batched with crystals get zero image shifts: their masks are exactly the
    molecular (boolean) ones."""
    from molprop.featurize.graph2d import Graph2DFeaturizer

    feat = Graph2DFeaturizer()
    smiles = ["CCO", "c1ccccc1O", "[Na+].[Cl-]", "C", "CC(=O)Nc1ccc(O)cc1", "O=C=O"]
    plain = collate_graphs([feat.from_smiles(s) for s in smiles])
    zeros = collate_graphs([feat.from_smiles(s) for s in smiles])
    zeros.edge_vec_shift = torch.zeros(zeros.edge_index.shape[1], 3)
    for build in (edge_token_set, node_token_set):
        a, b = build(plain), build(zeros)
        assert b.multiplicity is None
        assert torch.equal(a.structure_mask, b.structure_mask)


@pytest.mark.parametrize("longest", [7.5, 2000.0])  # packed ids; ids of unique rows
def test_image_ids_identify_equal_and_opposite_shifts(longest):
    from molprop.nn.edge_sets import _image_ids

    shift = torch.tensor(
        [
            [1.25, -3.5, 0.0],
            [1.25, -3.5, 0.0],
            [-1.25, 3.5, 0.0],
            [0.0, 0.0, 0.0],
            [longest, 0.0, 2.0],
            [-longest, 0.0, -2.0],
        ]
    )
    sid, nid, zero = _image_ids(shift)
    assert sid[0] == sid[1] and sid[0] == nid[2] and nid[0] == sid[2] and sid[0] != sid[2]
    assert sid[4] == nid[5] and sid[4] != sid[5] and sid[3] == nid[3]
    assert zero.tolist() == [False, False, False, True, False, False]


def test_bonds_mode_supercell_atoms_keep_their_cell_features():
    """Mode ``bonds`` (periodic: radius tokens, bare-atom RDKit features, atom sums):
    every atom of a 2x2x1 supercell has its cell atom's node features, and the same multiset of
    token features, for every 10th oxide."""
    feat = Graph3DFeaturizer(mode="bonds")
    for atoms in OXIDES[::10]:
        cell, sup = feat.from_structure(atoms), feat.from_structure(atoms.repeat((2, 2, 1)))
        np.testing.assert_allclose(sup.x, np.tile(cell.x, (4, 1)), rtol=1e-6, atol=1e-6)
        rows = lambda m: m[np.lexsort(np.round(m, 5).T[::-1])]  # noqa: E731
        np.testing.assert_allclose(
            rows(sup.edge_attr), rows(np.tile(cell.edge_attr, (4, 1))), atol=1e-6
        )
