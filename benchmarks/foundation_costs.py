"""Costs that size the foundation pretraining: descriptor labels per molecule and pretraining
throughput per CPU second.

1. Labels: CPU ms per molecule of the RDKit 2D descriptors (``molprop.corpus.labels``, all
   ``Descriptors._descList``) and, when the ``mordred`` package (mordredcommunity) can be
   imported, of Mordred's 2D descriptors, on the same molecules (Lipophilicity SMILES).
2. Pretraining: molecules per CPU second of training steps (forward, masked descriptor loss,
   backward, AdamW) of the foundation encoder at hidden 64 and 128, one torch thread, batch 64,
   on the same molecules with their real RDKit descriptor targets.

    python -m benchmarks.foundation_costs [--molecules 400] [--steps 30]

Writes benchmarks/results/foundation_costs.json. CPU seconds are this process's
(``time.process_time``), so a loaded machine changes wall time more than these numbers.
"""

from __future__ import annotations

import argparse
import importlib
import time

import numpy as np
import pandas as pd
import torch

from benchmarks.common import REPO, machine_facts, save_result
from molprop.corpus.labels import descriptor_names, descriptor_row
from molprop.data.batch import collate_graphs
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.models.model import MolPropModel
from molprop.nn.heads import masked_loss
from molprop.training.foundation import PretrainConfig
from molprop.training.lightning_module import optimizer_groups


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def rdkit_cost(smiles: list[str]) -> tuple[float, np.ndarray]:
    start = time.process_time()
    rows = [descriptor_row(s, timeout_s=0)[0] for s in smiles]
    return (time.process_time() - start) / len(smiles) * 1e3, np.stack(rows)


def mordred_cost(smiles: list[str]) -> dict:
    try:
        mordred = importlib.import_module("mordred")
        descriptors = importlib.import_module("mordred.descriptors")
        from rdkit import Chem
    except ImportError:
        return {"measured": False, "reason": "mordred (mordredcommunity) is not installed"}
    calc = mordred.Calculator(descriptors, ignore_3D=True)
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    start = time.process_time()
    for mol in mols:
        calc(mol)
    ms = (time.process_time() - start) / len(mols) * 1e3
    return {
        "measured": True,
        "ms_per_molecule": round(ms, 2),
        "descriptors": len(calc.descriptors),
        "molecules": len(mols),
        "version": _version("mordredcommunity"),
    }


def throughput(hidden: int, graphs, targets: np.ndarray, steps: int, batch: int) -> dict:
    torch.manual_seed(0)
    cfg = PretrainConfig(hidden=hidden)
    g0 = graphs[0]
    model = MolPropModel.from_config(
        cfg.model_config(g0.x.shape[1], g0.edge_attr.shape[1], targets.shape[1])
    )
    opt = torch.optim.AdamW(optimizer_groups(model, 0.0), lr=5e-4)
    rng = np.random.default_rng(0)
    batches = [rng.choice(len(graphs), batch, replace=False) for _ in range(steps + 3)]
    seen = 0
    cpu = wall = 0.0
    for i, idx in enumerate(batches):
        b = collate_graphs([graphs[j] for j in idx], targets[idx])
        t_cpu, t_wall = time.process_time(), time.perf_counter()
        loss = masked_loss(model(b), b.y, b.y_mask, "regression", "mse")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 3:  # the first batches warm up the allocator
            cpu += time.process_time() - t_cpu
            wall += time.perf_counter() - t_wall
            seen += len(idx)
    return {
        "hidden": hidden,
        "parameters": sum(p.numel() for p in model.parameters()),
        "molecules_per_cpu_s": round(seen / cpu, 1),
        "molecules_per_wall_s": round(seen / wall, 1),
        "steps": steps,
        "batch": batch,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--molecules", type=int, default=400)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    frame = pd.read_csv(REPO / "data" / "moleculenet" / "lipo_chemprop.csv.gz")
    smiles = frame["smiles"].head(args.molecules).tolist()
    rd_ms, raw = rdkit_cost(smiles)
    mordred = mordred_cost(smiles[: max(50, args.molecules // 4)])
    # the training targets: robust-scaled descriptors of these molecules, constants dropped
    keep = np.nanmax(raw, axis=0) > np.nanmin(raw, axis=0)
    raw = raw[:, keep]
    q25, med, q75 = np.nanpercentile(raw, [25, 50, 75], axis=0)
    scale = np.where(q75 > q25, q75 - q25, np.nanstd(raw, axis=0) + 1e-6)
    targets = np.clip((raw - med) / scale, -6, 6).astype(np.float32)
    featurizer = build_featurizer(FeaturizerConfig())
    graphs = [featurizer.from_smiles(s) for s in smiles]
    runs = [throughput(h, graphs, targets, args.steps, args.batch) for h in (64, 128)]
    payload = {
        "what": __doc__.split("\n\n")[0],
        "molecules": len(smiles),
        "source": "data/moleculenet/lipo_chemprop.csv.gz (first rows)",
        "rdkit_descriptors": {
            "ms_per_molecule": round(rd_ms, 2),
            "descriptors": len(descriptor_names()),
            "cpu_hours_per_million": round(rd_ms * 1e6 / 1e3 / 3600, 2),
        },
        "mordred_2d": mordred,
        "pretraining_throughput": runs,
        "targets": int(targets.shape[1]),
        "torch_threads": 1,
        "machine": machine_facts(),
    }
    path = save_result("foundation_costs", payload)
    print(
        f"RDKit {rd_ms:.2f} ms/mol; mordred {mordred}; "
        + "; ".join(f"hidden {r['hidden']}: {r['molecules_per_cpu_s']} mol/CPU-s" for r in runs)
    )
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
