"""Mask scaling: memory and time of ESA mask construction (+ one forward pass) as batches grow.

Two constructions of the same (B, L_max, L_max) mask (equal: tests/unit/nn/test_mask_reference.py):
molprop's per-graph ``molprop.nn.edge_sets.edge_token_set`` and the all-pairs (sum of edges)^2
reference of the paper's Algorithm 1 (``benchmarks.mask_reference``). Series:

* ``batch``: real HIV molecules (random order) added until the batch holds >= N directed edges;
* ``batch128``: 128 HIV molecules, in file order and as one size-sorted bucket (the target);
* ``single``: one long alkane chain with N directed edges (a single huge graph), for which
  per-graph and all-pairs are the same size; ``train`` runs forward + backward of the default
  ESA model on it (the "30,000 edges within 24 GB" check).

Each point runs in its own subprocess under ``RLIMIT_AS`` (= its address space after set-up +
``--budget-gb``), so running out of memory is recorded as ``oom`` instead of hurting the machine.
Memory is the growth of peak RSS over the set-up RSS.

Usage: ``python -m benchmarks.mask_scaling --budget-gb 4`` (24 on a machine that has it free).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import logging
import resource
import subprocess
import sys
import time

import numpy as np

from benchmarks.common import REPO, save_result, thread_env

log = logging.getLogger(__name__)
EDGES = (100, 300, 1000, 3000, 10000, 30000)


def _hiv_graphs(n_edges: int | None, count: int | None, sort: bool, seed: int = 0):
    import pandas as pd

    from molprop.featurize.graph2d import Graph2DFeaturizer

    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"].tolist()
    order = (
        np.arange(len(smiles)) if count else np.random.default_rng(seed).permutation(len(smiles))
    )
    featurizer, graphs, total = Graph2DFeaturizer(), [], 0
    for i in order:
        try:
            g = featurizer.from_smiles(smiles[i])
        except Exception:  # noqa: BLE001 - skip the few unparsable HIV rows
            continue
        graphs.append(g)
        total += g.n_edges
        if (n_edges is not None and total >= n_edges) or (
            count is not None and len(graphs) >= count
        ):
            break
    if sort:
        graphs.sort(key=lambda g: g.n_edges)
    return graphs


def build_graphs(series: str, size: int):
    from molprop.featurize.graph2d import Graph2DFeaturizer

    if series == "batch":
        return _hiv_graphs(size, None, sort=False)
    if series == "batch128_file_order":
        return _hiv_graphs(None, 128, sort=False)
    if series == "batch128_bucketed":  # one size bucket, as molprop's sampler makes them
        graphs = _hiv_graphs(None, 128 * 16, sort=True)
        mid = len(graphs) // 2
        return graphs[mid - 64 : mid + 64]
    if series == "single":  # built from an RDKit Mol: the SMILES is longer than parse_smiles allows
        from rdkit import Chem

        return [Graph2DFeaturizer()(Chem.MolFromSmiles("C" * (size // 2 + 1)))]
    raise ValueError(series)


def _status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> int:
    """Free what set-up left behind, reset the kernel's peak-RSS mark (VmHWM); -> RSS in kB."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def measure_point(series: str, size: int, method: str, phase: str, budget_gb: float) -> dict:
    """Runs inside the child process: set up, cap memory, build mask (+ forward/backward)."""
    import torch

    from benchmarks.mask_reference import reference_esa_mask
    from molprop.data.batch import collate_graphs
    from molprop.models.config import ModelConfig
    from molprop.models.model import MolPropModel
    from molprop.nn.edge_sets import edge_token_set

    graphs = build_graphs(series, size)
    batch = collate_graphs(graphs)
    model = None
    if phase != "mask":
        torch.manual_seed(0)
        model = MolPropModel.from_config(
            ModelConfig(node_dim=batch.x.shape[1], edge_dim=batch.edge_attr.shape[1], n_tasks=1)
        )
    build = (
        reference_esa_mask
        if method == "all_pairs"
        else (lambda b: edge_token_set(b).structure_mask)
    )
    build(collate_graphs(graphs[:2]))  # warm-up: torch's one-time allocations are not the mask's
    vsz = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    limit = vsz + int(budget_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    base = _reset_peak_rss()
    info = {
        "series": series,
        "size": size,
        "method": method,
        "phase": phase,
        "n_graphs": len(graphs),
        "total_edges": int(batch.edge_index.shape[1]),
        "max_edges": max(g.n_edges for g in graphs),
    }
    start = time.perf_counter()
    try:
        if phase == "mask":
            mask = build(batch)
            info["mask_shape"] = list(mask.shape)
            info["mask_mb"] = round(mask.numel() / 2**20, 2)
            info["all_pairs_matrix_mb"] = round(info["total_edges"] ** 2 / 2**20, 2)
        elif phase == "forward":
            with torch.inference_mode():
                model.eval()(batch)
        else:  # train: forward + backward
            model.train()
            model(batch).sum().backward()
        info["status"] = "ok"
    except (MemoryError, RuntimeError) as exc:  # torch reports allocation failure as RuntimeError
        info["status"] = (
            "oom" if "memory" in str(exc).lower() or isinstance(exc, MemoryError) else "error"
        )
        info["error"] = str(exc)[:200]
    info["seconds"] = round(time.perf_counter() - start, 3)
    info["peak_delta_mb"] = round((_status_kb("VmHWM") - base) / 1024, 1)
    info["budget_gb"] = budget_gb
    return info


def run_point(
    series: str, size: int, method: str, phase: str, budget_gb: float, timeout: float
) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.mask_scaling",
        "--child",
        series,
        str(size),
        method,
        phase,
        str(budget_gb),
    ]
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env={**__import__("os").environ, **thread_env(1)},
        )
    except subprocess.TimeoutExpired:
        return {
            "series": series,
            "size": size,
            "method": method,
            "phase": phase,
            "status": f"timeout>{timeout:.0f}s",
        }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:  # killed by the allocator before it could report
        return {
            "series": series,
            "size": size,
            "method": method,
            "phase": phase,
            "status": "oom" if proc.returncode < 0 or "memory" in proc.stderr.lower() else "error",
            "error": proc.stderr[-300:],
        }
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--budget-gb", type=float, default=4.0, help="memory allowed per point")
    p.add_argument("--edges", nargs="+", type=int, default=list(EDGES))
    p.add_argument(
        "--train-edges",
        nargs="*",
        type=int,
        default=[1000, 3000, 10000, 30000],
        help="single-graph train points (none: --train-edges with no value)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per point")
    p.add_argument("--only-train", action="store_true", help="only the single-graph train points")
    p.add_argument("--series", nargs="+", default=["batch", "single"], choices=["batch", "single"])
    p.add_argument("--result-name", default="mask_scaling", help="results/<name>.json")
    p.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        series, size, method, phase, budget = args.child
        print(json.dumps(measure_point(series, int(size), method, phase, float(budget))))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    points = []
    plan = []
    if "batch" in args.series:
        plan += [("batch128_file_order", 0, m, "mask") for m in ("molprop", "all_pairs")]
        plan += [("batch128_bucketed", 0, m, "mask") for m in ("molprop", "all_pairs")]
    for series in args.series:
        for n in args.edges:
            plan += [
                (series, n, "molprop", "mask"),
                (series, n, "all_pairs", "mask"),
                (series, n, "molprop", "forward"),
            ]
    plan = [] if args.only_train else plan
    plan += [("single", n, "molprop", "train") for n in args.train_edges]
    failed: set[tuple[str, str, str]] = set()
    for series, n, method, phase in plan:
        key = (series, method, phase)
        if key in failed:  # a smaller size already ran out of memory / time
            points.append(
                {
                    "series": series,
                    "size": n,
                    "method": method,
                    "phase": phase,
                    "status": "skipped (smaller size failed)",
                }
            )
            continue
        point = run_point(series, n, method, phase, args.budget_gb, args.timeout)
        log.info("%s", point)
        points.append(point)
        if point["status"] != "ok":
            failed.add(key)
        save_result(
            args.result_name,
            {
                "budget_gb": args.budget_gb,
                "points": points,
                "command": " ".join(["python -m benchmarks.mask_scaling", *(argv or sys.argv[1:])]),
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
