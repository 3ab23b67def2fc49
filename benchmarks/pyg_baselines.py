"""PyG baselines: GIN (GINEConv, edge features) and PNA, each with residual connections and
batch normalisation, trained with the same split, epoch budget and early stopping as molprop.

Node/edge features are molprop's 2D featuriser (so only the architecture differs).

    h_{l+1} = h_l + Dropout(ReLU(BN(Conv(h_l, edge_index, edge_attr))))     (l = 1..n_layers)
    graph   = [sum-pool(h) | mean-pool(h)] -> MLP -> n_tasks

Usage (one run, metrics JSON on stdout and in --out):
``python -m benchmarks.pyg_baselines --csv <data>_seed0.csv --model gin --task-type regression
--epochs 30 --patience 10 --seed 0 --out /tmp/gin.json``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader
from torch_geometric.nn import GINEConv, PNAConv, global_add_pool, global_mean_pool
from torch_geometric.utils import degree

from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.training.metrics import compute_metrics


class ResidualGNN(nn.Module):
    """Stack of GINE or PNA convolutions with residuals + BatchNorm, sum|mean pooling, MLP head.

    Shapes: x (N, node_dim), edge_index (2, E), edge_attr (E, edge_dim), batch (N,) -> (B, n_tasks).
    """

    def __init__(
        self,
        kind: str,
        node_dim: int,
        edge_dim: int,
        hidden: int,
        n_layers: int,
        n_tasks: int,
        deg: torch.Tensor | None = None,
        dropout: float = 0.1,
    ):
        super().__init__()
        self.embed = nn.Linear(node_dim, hidden)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for _ in range(n_layers):
            if kind == "gin":
                mlp = nn.Sequential(
                    nn.Linear(hidden, 2 * hidden),
                    nn.BatchNorm1d(2 * hidden),
                    nn.ReLU(),
                    nn.Linear(2 * hidden, hidden),
                )
                conv = GINEConv(mlp, train_eps=True, edge_dim=edge_dim)
            elif kind == "pna":
                conv = PNAConv(
                    hidden,
                    hidden,
                    aggregators=["mean", "min", "max", "std"],
                    scalers=["identity", "amplification", "attenuation"],
                    deg=deg,
                    edge_dim=edge_dim,
                    towers=4,
                    pre_layers=1,
                    post_layers=1,
                    divide_input=False,
                )
            else:
                raise ValueError(f"unknown model {kind!r} (gin, pna)")
            self.convs.append(conv)
            self.norms.append(nn.BatchNorm1d(hidden))
        self.dropout = dropout
        self.head = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_tasks)
        )

    def forward(self, data: Data) -> torch.Tensor:
        h = self.embed(data.x)
        for conv, norm in zip(self.convs, self.norms, strict=True):
            update = F.relu(norm(conv(h, data.edge_index, data.edge_attr)))
            h = h + F.dropout(update, self.dropout, self.training)
        pooled = torch.cat([global_add_pool(h, data.batch), global_mean_pool(h, data.batch)], -1)
        return self.head(pooled)


def to_data(smiles: list[str], targets: np.ndarray) -> list[Data]:
    featurizer = Graph2DFeaturizer()
    out = []
    for smi, y in zip(smiles, targets, strict=True):
        g = featurizer.from_smiles(smi)
        out.append(
            Data(
                x=torch.from_numpy(g.x),
                edge_index=torch.from_numpy(g.edge_index),
                edge_attr=torch.from_numpy(g.edge_attr),
                y=torch.tensor([[y]], dtype=torch.float32),
            )
        )
    return out


def degree_histogram(data: list[Data]) -> torch.Tensor:
    max_deg = max(
        int(degree(d.edge_index[1], d.num_nodes).max()) if d.num_edges else 0 for d in data
    )
    hist = torch.zeros(max_deg + 1, dtype=torch.long)
    for d in data:
        hist += torch.bincount(degree(d.edge_index[1], d.num_nodes).long(), minlength=hist.numel())
    return hist


@torch.no_grad()
def predict(model: nn.Module, loader: DataLoader) -> np.ndarray:
    model.eval()
    return torch.cat([model(b) for b in loader]).numpy()


def train_and_evaluate(args: argparse.Namespace) -> dict:
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    frame = pd.read_csv(args.csv)
    y = frame["target"].to_numpy(np.float64)
    regression = args.task_type == "regression"
    parts = {k: np.flatnonzero(frame["split"].to_numpy() == k) for k in ("train", "val", "test")}
    mean, std = (
        (y[parts["train"]].mean(), y[parts["train"]].std() or 1.0) if regression else (0.0, 1.0)
    )
    data = to_data(frame["smiles"].tolist(), (y - mean) / std)
    sets = {k: [data[i] for i in idx] for k, idx in parts.items()}
    g = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(sets["train"], batch_size=args.batch_size, shuffle=True, generator=g)
    eval_loaders = {k: DataLoader(v, batch_size=256) for k, v in sets.items()}
    deg = degree_histogram(sets["train"]) if args.model == "pna" else None
    model = ResidualGNN(
        args.model, data[0].x.shape[1], data[0].edge_attr.shape[1], args.hidden, args.layers, 1, deg
    )
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = F.mse_loss if regression else F.binary_cross_entropy_with_logits
    best, best_state, best_epoch, bad, epoch_seconds = float("inf"), None, 0, 0, []
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.train()
        for batch in train_loader:
            if (
                batch.num_nodes < 2
            ):  # BatchNorm cannot train on one node (e.g. a last batch = methane)
                continue
            opt.zero_grad()
            loss = loss_fn(model(batch), batch.y)
            loss.backward()
            opt.step()
        epoch_seconds.append(time.perf_counter() - start)
        val_pred = torch.from_numpy(predict(model, eval_loaders["val"]))
        val_loss = float(loss_fn(val_pred, torch.cat([d.y for d in sets["val"]])))
        if val_loss < best:
            best, best_epoch, bad = val_loss, epoch, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= args.patience:
                break
    model.load_state_dict(best_state)
    out = {
        "model": args.model,
        "best_epoch": best_epoch,
        "epochs_run": epoch + 1,
        "seconds_per_epoch": float(np.median(epoch_seconds)),
        "n_params": sum(p.numel() for p in model.parameters()),
    }
    for part, loader in eval_loaders.items():
        raw = predict(model, loader)[:, 0]
        pred = raw * std + mean if regression else 1 / (1 + np.exp(-raw))
        out[part] = compute_metrics(y[parts[part], None], pred[:, None], args.task_type)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--csv", required=True, help="table with smiles, target, split columns")
    p.add_argument("--model", choices=["gin", "pna"], required=True)
    p.add_argument("--task-type", choices=["regression", "classification"], default="regression")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--patience", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    result = train_and_evaluate(args)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["test"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
