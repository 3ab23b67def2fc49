"""molprop's ESA / NSA encoder inside a PyTorch Geometric model: the same embeddings as molprop's
own forward pass, and a user model that learns from PyG ``Data`` of real molecules (ESOL)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from molprop.data.batch import collate_graphs
from molprop.data.pyg import graph_batch_from_pyg
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.models.config import ModelConfig
from molprop.models.model import MolPropModel
from molprop.models.pyg import PyGEncoder

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Batch  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

ESOL = Path(__file__).resolve().parents[3] / "data" / "moleculenet" / "ESOL.csv.gz"
TARGET = "measured log solubility in mols per litre"
F2D = Graph2DFeaturizer()
F3D = Graph3DFeaturizer(num_gaussians=8)
SMALL = {"hidden_dim": 32, "heads": 4, "num_seeds": 4, "head_hidden": 32}


@pytest.fixture(scope="module")
def esol() -> pd.DataFrame:
    return pd.read_csv(ESOL).iloc[:200]


#: (name, featuriser, ModelConfig options): ESA (both token schemes), NSA, 3D with distances
CASES = [
    ("esa", F2D, {"layers": "MSMP S"}),
    ("esa_undirected", F2D, {"layers": "MSP", "token_scheme": "undirected"}),
    ("nsa", F2D, {"token_kind": "nsa", "layers": "MSMP"}),
    ("esa_3d", F3D, {"layers": "MSP", "learnable_rbf": 4, "pair_rbf": 4}),
    ("nsa_3d", F3D, {"token_kind": "nsa", "layers": "MMP", "pair_rbf": 4}),
]


@pytest.mark.parametrize("name,featurizer,options", CASES, ids=[c[0] for c in CASES])
def test_embeddings_on_a_pyg_batch_equal_molprops_forward(name, featurizer, options, esol):
    """A PyG batch of 12 ESOL molecules and methane (one atom, no edges: a self-loop token)
    gives what molprop's own collation gives, graph embeddings, token states and the whole
    model's output."""
    smiles = [*esol["smiles"].iloc[:12], "C"]
    graphs = [featurizer.from_smiles(s) for s in smiles]
    torch.manual_seed(0)
    config = ModelConfig(featurizer.node_dim, featurizer.edge_dim, 2, **SMALL, **options)
    model = MolPropModel.from_config(config).eval()
    encoder = PyGEncoder.from_model(model)
    batch = Batch.from_data_list([g.to_pyg() for g in graphs])
    ours = collate_graphs(graphs)
    with torch.no_grad():
        emb = encoder(batch)
        assert emb.shape == (len(graphs), encoder.out_dim)
        torch.testing.assert_close(emb, model.embed(ours), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(
            model(graph_batch_from_pyg(batch)), model(ours), rtol=1e-6, atol=1e-6
        )
        states, tokens = encoder.encode(batch)
        h, reference = model.encoder(ours)
        torch.testing.assert_close(tokens.pad(states), h * tokens.valid[..., None])
        assert states.shape == (int(reference.n_tokens.sum()), encoder.dim)
    if config.token_kind == "nsa":  # one row per node, in the batch's node order
        assert states.shape[0] == batch.num_nodes
        assert torch.equal(tokens.graph, batch.batch)
    elif config.token_scheme == "directed":  # one per edge (+ methane's self-loop token)
        assert states.shape[0] == batch.num_edges + 1


def test_create_matches_a_model_built_from_the_same_config():
    torch.manual_seed(3)
    encoder = PyGEncoder.create(F2D.node_dim, F2D.edge_dim, **SMALL)
    torch.manual_seed(3)
    model = MolPropModel.from_config(ModelConfig(F2D.node_dim, F2D.edge_dim, 1, **SMALL))
    ours = dict(encoder.named_parameters())
    theirs = {k: v for k, v in model.named_parameters() if not k.startswith("head.")}
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert PyGEncoder.create(F2D.node_dim, F2D.edge_dim, "nsa", **SMALL).encoder.token_kind == "nsa"


@pytest.fixture
def one_thread():
    """Tiny matrices gain nothing from a second thread, and a busy machine makes threads wait
    on each other: one thread gives the same numbers and time everywhere."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class UserModel(nn.Module):
    """What a PyG user writes: molprop's ESA encoder + their own linear head."""

    def __init__(self, encoder: PyGEncoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.out_dim, 1)

    def forward(self, data) -> torch.Tensor:
        return self.head(self.encoder(data)).squeeze(-1)


def test_a_pyg_model_with_the_esa_encoder_learns_from_pyg_data(esol, one_thread):
    """200 ESOL molecules as PyG ``Data``, a PyG DataLoader, 10 epochs of Adam: the training loss
    falls below 0.7 of its start (0.24 here; 0.14-0.38 with seeds 0-7), and the trained encoder's
    embeddings of a PyG batch are molprop's own embeddings of the same molecules."""
    graphs = [F2D.from_smiles(s) for s in esol["smiles"]]
    y = esol[TARGET].to_numpy(np.float32)
    y = (y - y.mean()) / y.std()
    dataset = [g.to_pyg(y=t) for g, t in zip(graphs, y, strict=True)]
    torch.manual_seed(0)
    config = ModelConfig(F2D.node_dim, F2D.edge_dim, 1, layers="MSP", dropout=0.0, **SMALL)
    molprop_model = MolPropModel.from_config(config)
    user = UserModel(PyGEncoder.from_model(molprop_model))
    loader = DataLoader(
        dataset, batch_size=25, shuffle=True, generator=torch.Generator().manual_seed(0)
    )
    everything = Batch.from_data_list(dataset)

    def full_loss() -> float:
        user.eval()
        with torch.no_grad():
            return float(nn.functional.mse_loss(user(everything), everything.y.squeeze(-1)))

    initial = full_loss()
    optimizer = torch.optim.Adam(user.parameters(), lr=1e-3)
    for _ in range(10):
        user.train()
        for batch in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(user(batch), batch.y.squeeze(-1))
            loss.backward()
            optimizer.step()
    final = full_loss()
    assert final < 0.7 * initial, (initial, final)

    molprop_model.eval()
    with torch.no_grad():
        emb = user.encoder(everything)
        torch.testing.assert_close(
            emb, molprop_model.embed(collate_graphs(graphs)), rtol=1e-5, atol=1e-5
        )
        assert float(emb.std(0).mean()) > 1e-3  # real embeddings, not a constant
