"""Where the time goes: reproducible profiles of training and prediction, with
the top items of each.

1. **Training step** of the default ESA and of ESA-small (``--preset small``) on real
   Lipophilicity molecules, batches as training makes them (size-bucketed, shuffled): forward,
   loss, backward, gradient clipping, AdamW step and the weight-average update, under
   ``torch.profiler`` with FLOP counting. Reported: ms per step, the top operators by self CPU
   time, the same grouped into categories, the matrix products' achieved GFLOP/s next to a
   reference product of the same shape class measured in the same process (how close to the
   core's peak the Linear layers run), and the share of padded token slots that are real tokens.
2. **Prediction** of HIV molecules, as ``molprop predict`` does it, by stage: RDKit parse +
   featurisation, the applicability-domain check (shipped ``solubility`` model's training set),
   and the model forward pass (default ESA and ESA-small, batch 256, size-sorted), plus the top
   operators of the forward pass.

Weights are freshly initialised: speed does not depend on their values. One thread
(``torch.set_num_threads``), so numbers compare with the other benchmarks' 1-thread runs.

Usage: ``python -m benchmarks.hotspots [--train-steps 20] [--n-predict 2000]``
Writes ``results/hotspots.json``.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import defaultdict

import numpy as np
import pandas as pd
import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.common import DATASETS, REPO, save_result
from molprop.artifact.domain import ApplicabilityDomain
from molprop.data.loader import GraphDataset, SizeBucketBatchSampler
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.io.table import featurize_rows
from molprop.models.config import PRESETS, ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import forward_members
from molprop.nn.heads import masked_loss

log = logging.getLogger(__name__)

# operator name (prefix match after "aten::") -> category
CATEGORIES = (
    ("matrix products (Linear)", ("addmm", "mm", "bmm", "matmul")),
    ("attention kernel", ("_scaled_dot_product", "_flash_attention", "scaled_dot_product")),
    (
        "elementwise, GELU, LayerNorm",
        (
            "gelu",
            "native_layer_norm",
            "add",
            "mul",
            "div",
            "sub",
            "neg",
            "sqrt",
            "pow",
            "exp",
            "softmax",
            "sum",
            "mean",
            "clamp",
            "threshold",
        ),
    ),
    ("optimiser + weight average", ("_foreach", "lerp", "addcmul", "addcdiv", "_fused_adamw")),
    (
        "copies, gathers, padding",
        (
            "copy_",
            "cat",
            "index",
            "_index_put",
            "clone",
            "fill_",
            "zero_",
            "scatter",
            "gather",
            "stack",
            "contiguous",
            "masked_fill",
            "new_zeros",
            "zeros",
            "empty",
        ),
    ),
    ("masks", ("eq", "ne", "where", "any", "all", "bitwise", "logical", "lt", "gt", "le", "ge")),
)
MATMUL_OPS = ("aten::addmm", "aten::mm", "aten::bmm")


def category(name: str) -> str:
    op = name.removeprefix("aten::")
    for label, prefixes in CATEGORIES:
        if any(op == p or op.startswith(p) for p in prefixes):
            return label
    return "other"


def op_tables(prof, top: int = 12) -> dict:
    """Top operators by self CPU time, categories, and the matrix products' GFLOP/s."""
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    ops = [
        {
            "op": e.key,
            "self_ms": round(e.self_cpu_time_total / 1e3, 1),
            "share": round(e.self_cpu_time_total / total, 4),
            "calls": e.count,
        }
        for e in events[:top]
    ]
    cats: dict[str, float] = defaultdict(float)
    for e in events:
        cats[category(e.key)] += e.self_cpu_time_total
    mm = [e for e in events if e.key in MATMUL_OPS]
    mm_us = sum(e.self_cpu_time_total for e in mm)
    mm_flops = sum(e.flops for e in mm)
    return {
        "total_ms": round(total / 1e3, 1),
        "top_ops": ops,
        "categories": {
            k: round(v / total, 4) for k, v in sorted(cats.items(), key=lambda kv: -kv[1])
        },
        "matmul_gflops": round(mm_flops / mm_us / 1e3, 1) if mm_us else None,
    }


def reference_gflops(m: int = 2240, k: int = 128, n: int = 256, repeats: int = 30) -> float:
    """GFLOP/s of one fp32 ``addmm`` of a Linear-layer shape on this core (the attainable peak)."""
    a, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    for _ in range(5):
        torch.addmm(b, a, w.t())
    start = time.perf_counter()
    for _ in range(repeats):
        torch.addmm(b, a, w.t())
    return round(2 * m * k * n * repeats / (time.perf_counter() - start) / 1e9, 1)


def model_config(preset: str, node_dim: int, edge_dim: int) -> ModelConfig:
    return ModelConfig(node_dim=node_dim, edge_dim=edge_dim, n_tasks=1, **PRESETS[preset]["model"])


def real_token_share(dataset: GraphDataset, batches: list[list[int]]) -> float:
    """Real edge tokens / padded token slots over ``batches`` (ESA pads each batch to its
    largest graph)."""
    edges = np.asarray([g.n_edges for g in dataset.graphs])
    real = sum(int(edges[b].sum()) for b in batches)
    slots = sum(len(b) * max(1, int(edges[b].max())) for b in batches)
    return real / slots


def profile_training(graphs, targets, preset: str, steps: int, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    train = TrainConfig(**PRESETS[preset]["train"])  # what `molprop train --preset` uses
    batch_size = train.batch_size
    cfg = model_config(preset, graphs[0].x.shape[1], graphs[0].edge_attr.shape[1])
    model = MolPropModel.from_config(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
    ema = [torch.zeros_like(p) for p in model.parameters()]
    dataset = GraphDataset(graphs, targets)
    sampler = SizeBucketBatchSampler(dataset.sizes(), batch_size, shuffle=True, seed=seed)
    batches = list(sampler)[: steps + 3]

    def step(idx):
        batch = dataset.collate(idx)
        loss = masked_loss(model(batch).float(), batch.y, batch.y_mask, "regression")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train.grad_clip)
        opt.step()
        with torch.no_grad():
            torch._foreach_mul_(ema, 0.99)
            torch._foreach_add_(ema, [p.detach() for p in model.parameters()], alpha=0.01)

    for idx in batches[:3]:  # warm-up (allocator, kernels)
        step(idx)
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        start = time.perf_counter()
        for idx in batches[3:]:
            step(idx)
        seconds = time.perf_counter() - start
    n = len(batches) - 3
    return {
        "preset": preset,
        "batch_size": batch_size,
        "steps": n,
        "ms_per_step_profiled": round(seconds / n * 1e3, 1),
        "real_token_share": round(real_token_share(dataset, batches[3:]), 3),
        "parameters": sum(p.numel() for p in model.parameters()),
        **op_tables(prof),
    }


def profile_prediction(smiles: list[str], presets: tuple[str, ...]) -> dict:
    feat = Graph2DFeaturizer()
    start = time.process_time()
    items = featurize_rows(smiles, feat.from_smiles)
    featurise_s = time.process_time() - start
    graphs = [g for g in items if not isinstance(g, Exception)]
    domain = ApplicabilityDomain.load(REPO / "pretrained" / "solubility")
    start = time.process_time()
    domain.in_domain(smiles)
    domain_s = time.process_time() - start
    n = len(smiles)
    out = {
        "n_molecules": n,
        "n_featurised": len(graphs),
        "featurise_ms_per_mol": round(featurise_s / n * 1e3, 3),
        "domain_ms_per_mol": round(domain_s / n * 1e3, 3),
        "mean_edge_tokens": round(float(np.mean([g.n_edges for g in graphs])), 1),
        "models": {},
    }
    for preset in presets:
        torch.manual_seed(0)
        model = MolPropModel.from_config(model_config(preset, feat.node_dim, feat.edge_dim)).eval()
        forward_members([model], graphs[:256])  # warm-up
        start = time.process_time()
        forward_members([model], graphs)
        model_s = time.process_time() - start
        with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
            forward_members([model], graphs)
        out["models"][preset] = {"model_ms_per_mol": round(model_s / n * 1e3, 3), **op_tables(prof)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--train-steps", type=int, default=20, help="profiled training steps per model")
    p.add_argument(
        "--n-predict", type=int, default=2000, help="HIV SMILES for the prediction profile"
    )
    p.add_argument("--presets", nargs="+", default=["default", "small"], choices=sorted(PRESETS))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    spec = DATASETS["Lipophilicity"]
    frame = pd.read_csv(spec.path)
    items = featurize_rows(frame[spec.smiles_column].tolist(), Graph2DFeaturizer().from_smiles)
    keep = [i for i, g in enumerate(items) if not isinstance(g, Exception)]
    y = frame[spec.target_column].to_numpy(dtype=np.float32)[keep, None]
    graphs = [items[i] for i in keep]
    y = (y - y.mean()) / y.std()
    result = {"threads": 1, "reference_addmm_gflops": reference_gflops(), "train": {}}
    for preset in args.presets:
        log.info("training profile: %s", preset)
        result["train"][preset] = profile_training(graphs, y, preset, args.train_steps)
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"][
        : args.n_predict
    ].tolist()
    log.info("prediction profile: %d HIV SMILES", len(smiles))
    result["predict"] = profile_prediction(smiles, tuple(args.presets))
    result["reference_addmm_gflops_end"] = reference_gflops()
    save_result("hotspots", result)
    log.info(
        "train %s",
        {k: (v["ms_per_step_profiled"], v["categories"]) for k, v in result["train"].items()},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
