"""Batched, size-sorted forward passes of one or several members (used by evaluation and
inference). Returns values in the model's output space (scaled regression / logits)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from molprop.data.loader import GraphDataset, SizeBucketBatchSampler
from molprop.errors import PredictionCancelled
from molprop.graph import MolGraph
from molprop.models.config import TaskConfig
from molprop.models.model import MolPropModel

#: Token budget of one forward pass on a CPU (molecules x largest size, sizes = edges + nodes;
#: ``batch_size`` still caps the molecule count). Measured (``benchmarks.hotspots``-style,
#: 3,000 HIV molecules, 1 thread): batches of 256 molecules ran 1.3-1.8x slower per molecule than
#: batches capped at ~4k tokens (large freshly allocated activations cost page faults and fall
#: out of cache); 2k-8k performed alike. GPUs keep whole batches (None).
CPU_MAX_TOKENS = 4096


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@torch.inference_mode()
def forward_members(
    members: Sequence[MolPropModel],
    graphs: Sequence[MolGraph],
    batch_size: int = 256,
    extra: np.ndarray | None = None,
    device: torch.device | None = None,
    embed: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """-> (n_members, n_graphs, n_tasks) raw outputs (or embeddings if ``embed``), in input order.
    ``should_stop`` is asked before every member's pass over a batch; when it returns true,
    :class:`PredictionCancelled` is raised (the work already done is dropped)."""
    device = device or default_device()
    dataset = GraphDataset(graphs, extra=extra)
    max_tokens = CPU_MAX_TOKENS if device.type == "cpu" else None
    batches = list(
        SizeBucketBatchSampler(dataset.sizes(), batch_size, shuffle=False, max_tokens=max_tokens)
    )
    outputs: list[np.ndarray] = []
    for model in members:
        model.to(device).eval()
        dim = model.embedding_dim if embed else model.n_tasks
        outputs.append(np.zeros((len(graphs), dim), dtype=np.float64))
    for k, idx in enumerate(batches):  # each batch collated once, then run through every member
        batch = dataset.collate(idx).to(device)
        rows = np.asarray(idx)
        for model, out in zip(members, outputs, strict=True):
            if should_stop is not None and should_stop():
                raise PredictionCancelled(f"prediction stopped at batch {k + 1} of {len(batches)}")
            res = model.embed(batch) if embed else model(batch)
            out[rows] = res.float().cpu().numpy()
    return np.stack(outputs) if outputs else np.zeros((0, len(graphs), 0))


def to_target_space(raw: np.ndarray, task: TaskConfig) -> np.ndarray:
    """Model outputs (..., T) -> target units (regression: ``task.scaler`` inverted; still per
    atom for ``per_atom`` tasks, see :func:`predict_targets`) or probabilities (classification:
    sigmoid of the logits)."""
    if task.task_type == "classification":
        return 1.0 / (1.0 + np.exp(-raw))
    return task.scaler.inverse(raw)


def per_atom_counts(graphs: Sequence[MolGraph]) -> np.ndarray:
    """(n, 1) heavy-atom counts, for per-atom (extensive) targets."""
    return np.asarray([g.n_nodes for g in graphs], dtype=np.float64)[:, None]


def predict_targets(
    members: Sequence[MolPropModel],
    graphs: Sequence[MolGraph],
    task: TaskConfig,
    extra: np.ndarray | None = None,
    batch_size: int = 256,
    device: torch.device | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """-> (n_members, n, T) predictions in target units (totals when ``per_atom``);
    ``should_stop``: see :func:`forward_members`."""
    raw = forward_members(
        members, graphs, batch_size=batch_size, extra=extra, device=device, should_stop=should_stop
    )
    values = to_target_space(raw, task)
    if task.per_atom and task.task_type == "regression":
        values = values * per_atom_counts(graphs)[None]
    return values
