"""MolGraph <-> PyTorch Geometric ``Data``, and a PyG ``Batch`` -> GraphBatch, on real molecules
(RDKit-featurised ESOL, a 3D conformer, a periodic oxide)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import ase.io
import numpy as np
import pandas as pd
import pytest
import torch

from molprop.chem.structures import from_ase
from molprop.data.batch import GraphBatch, collate_graphs
from molprop.data.pyg import graph_batch_from_pyg
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.graph import MolGraph

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data"


@pytest.fixture(scope="module")
def pyg():
    return pytest.importorskip("torch_geometric")


@pytest.fixture(scope="module")
def graphs_2d() -> list[MolGraph]:
    """20 ESOL molecules (SMILES kept, as at prediction) and methane (no heavy-atom edges)."""
    smiles = pd.read_csv(DATA / "moleculenet" / "ESOL.csv.gz")["smiles"].tolist()[:20] + ["C"]
    featurizer = Graph2DFeaturizer()
    return [replace(featurizer.from_smiles(s), smiles=s) for s in smiles]


@pytest.fixture(scope="module")
def graphs_3d() -> list[MolGraph]:
    featurizer = Graph3DFeaturizer(num_gaussians=8)
    return [featurizer.from_smiles(s) for s in ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1"]]


@pytest.fixture(scope="module")
def graphs_periodic() -> list[MolGraph]:
    oxides = ase.io.read(DATA / "periodic" / "oxides.extxyz.gz", index=":2")
    featurizer = Graph3DFeaturizer(num_gaussians=8)
    return [featurizer(from_ase(atoms)) for atoms in oxides]


def assert_same_graph(a: MolGraph, b: MolGraph) -> None:
    """Every field equal, arrays with the same dtype and shape."""
    for f in fields(MolGraph):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if isinstance(va, np.ndarray):
            assert isinstance(vb, np.ndarray), f.name
            assert va.dtype == vb.dtype and va.shape == vb.shape, f.name
            assert np.array_equal(va, vb), f.name
        else:
            assert va == vb and type(va) is type(vb), f.name


def test_round_trip_is_exact_for_every_field(pyg, graphs_2d, graphs_3d, graphs_periodic):
    graphs = graphs_2d + graphs_3d + graphs_periodic
    # the molecules set every MolGraph field at least once: a new field must be mapped too
    unset = {f.name for f in fields(MolGraph) if all(getattr(g, f.name) is None for g in graphs)}
    assert unset == set()
    for g in graphs:
        data = g.to_pyg()
        assert isinstance(data, pyg.data.Data)
        assert_same_graph(MolGraph.from_pyg(data), g)


def test_round_trip_through_a_pyg_batch(pyg, graphs_2d, graphs_3d):
    """PyG batching and splitting keep every field (fingerprints stack to (B, K), SMILES to a
    list), and targets batch to (B, T)."""
    for graphs in (graphs_2d, graphs_3d):
        batch = pyg.data.Batch.from_data_list([g.to_pyg(y=[i, -i]) for i, g in enumerate(graphs)])
        assert batch.y.shape == (len(graphs), 2) and batch.y.dtype == torch.float32
        if graphs[0].fingerprint is not None:
            assert batch.fingerprint.shape == (len(graphs), graphs[0].fingerprint.size)
            assert batch.smiles == [g.smiles for g in graphs]
        for g, data in zip(graphs, batch.to_data_list(), strict=True):
            assert_same_graph(MolGraph.from_pyg(data), g)
        # a batch of one graph is one graph
        assert_same_graph(
            MolGraph.from_pyg(pyg.data.Batch.from_data_list([graphs[0].to_pyg()])), graphs[0]
        )


def test_mapping_names_and_copies(pyg, graphs_2d, graphs_3d):
    g, g3 = graphs_2d[0], graphs_3d[0]
    data = g.to_pyg(y=1.5)
    assert data.y.tolist() == [[1.5]]
    assert data.heavy_atoms.tolist() == [g.heavy_atoms] and data.smiles == g.smiles
    assert data.num_nodes == g.n_nodes and data.num_edges == g.n_edges
    assert "pos" not in data and "z" not in data
    data3 = g3.to_pyg()
    assert data3.pos.shape == (g3.n_nodes, 3) and data3.z.dtype == torch.int64
    data.x += 1.0  # the Data owns its arrays
    assert not np.array_equal(data.x.numpy(), g.x)
    back = MolGraph.from_pyg(data)
    data.x += 1.0  # and so does the MolGraph read back
    assert np.array_equal(back.x, g.x + 1.0)


def test_from_pyg_takes_plain_pyg_graphs_and_refuses_batches(pyg, graphs_2d):
    x = torch.randn(3, 4)
    plain = pyg.data.Data(x=x, edge_index=torch.tensor([[0, 1], [1, 0]]))
    g = MolGraph.from_pyg(plain)
    assert g.edge_attr.shape == (2, 0) and g.pos is None and g.smiles is None
    assert np.array_equal(g.x, x.numpy())
    batch = pyg.data.Batch.from_data_list([graphs_2d[0].to_pyg(), graphs_2d[1].to_pyg()])
    with pytest.raises(ValueError, match="to_data_list"):
        MolGraph.from_pyg(batch)


def test_to_pyg_without_pyg_names_the_extra(graphs_2d, monkeypatch):
    """No PyG installed (here: hidden): a clear ImportError naming ``molprop[pyg]``."""
    for name in [m for m in sys.modules if m.split(".")[0] == "torch_geometric"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    with pytest.raises(ImportError, match=r"pip install molprop\[pyg\]"):
        graphs_2d[0].to_pyg()


def test_no_molprop_module_imports_pyg_when_imported():
    """PyG is optional: importing every module of molprop (the PyG conversions included) loads
    none of it; a module that needs it at import time fails here, installed or not."""
    code = (
        "import importlib, pkgutil, sys, molprop\n"
        "for info in pkgutil.walk_packages(molprop.__path__, 'molprop.'):\n"
        "    if '.migrations' in info.name:\n"
        "        continue  # Alembic scripts, run only by Alembic\n"
        "    try:\n"
        "        importlib.import_module(info.name)\n"
        "    except ImportError as exc:\n"
        "        if 'torch_geometric' in str(exc):\n"
        "            raise\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch_geometric'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


BATCH_FIELDS = [f.name for f in fields(GraphBatch) if f.name not in ("y", "y_mask", "extra")]


@pytest.mark.parametrize("kind", ["2d", "3d", "periodic"])
def test_pyg_batch_becomes_the_collated_batch(pyg, kind, graphs_2d, graphs_3d, graphs_periodic):
    """The same tensors, dtypes and shapes as molprop's own collation of the same graphs."""
    graphs = {"2d": graphs_2d, "3d": graphs_3d, "periodic": graphs_periodic}[kind]
    ours = collate_graphs(graphs)
    theirs = graph_batch_from_pyg(pyg.data.Batch.from_data_list([g.to_pyg() for g in graphs]))
    assert theirs.num_graphs == len(graphs)
    for name in BATCH_FIELDS:
        a, b = getattr(ours, name), getattr(theirs, name)
        if a is None:
            assert b is None, name
            continue
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert torch.equal(a, b), name
    # one Data is a batch of one graph
    single = graph_batch_from_pyg(graphs[0].to_pyg())
    assert torch.equal(single.n_nodes, collate_graphs(graphs[:1]).n_nodes)


def test_graphs_not_grouped_are_refused(pyg, graphs_2d):
    batch = pyg.data.Batch.from_data_list([g.to_pyg() for g in graphs_2d[:2]])
    shuffled = batch.clone()
    shuffled.batch = batch.batch.flip(0)
    with pytest.raises(ValueError, match="grouped by graph"):
        graph_batch_from_pyg(shuffled)
    crossing = batch.clone()
    crossing.edge_index = batch.edge_index.clone()
    crossing.edge_index[1, 0] = batch.num_nodes - 1  # an edge of graph 0 into graph 1
    with pytest.raises(ValueError, match="joins two graphs"):
        graph_batch_from_pyg(crossing)
