"""Inference variants of one shipped model on real HIV molecules, one thread:

- ``float``: the torch members as loaded (the reference);
- ``compile``: ``torch.compile`` (inductor, CPU, ``dynamic=True``) of each member;
- ``int8``: dynamic int8 quantisation of the Linear layers (``torch.ao.quantization``);
- ``onnxruntime``: the ``molprop export`` graphs on ONNX Runtime (CPU, 1 intra-op thread).

Each variant runs the same size-sorted, token-budgeted batches (``models.predict.forward_members``)
over the same featurised molecules; featurisation is timed once, apart. Reported per variant:
max |Δ| of the ensemble-mean prediction vs ``float`` (target units) and of any member's raw
output, molecules/s by wall clock and by process CPU time (best of ``--repeats`` passes; the
CPU figure is the one robust to other processes on a shared machine), and one-off set-up
seconds (compile, export). The machine's load average is recorded with the result.

Usage: ``python -m benchmarks.inference_variants [--model solubility] [--n 2000] [--repeats 3]``
Writes ``results/inference_variants.json`` and ``plots/inference_variants.png``
(``--plot-only``: the plot from the stored result).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from benchmarks.common import PLOTS, REPO, load_result, save_result
from molprop.artifact.onnx import export_onnx, load_onnx_members
from molprop.inference.predictor import Predictor
from molprop.models.predict import forward_members, to_target_space

log = logging.getLogger(__name__)


def timed(members, graphs, repeats: int) -> tuple[np.ndarray, float, float]:
    """(raw outputs, best wall s, best CPU s) of ``repeats`` passes."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        out = forward_members(members, graphs, device=torch.device("cpu"))
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return out, min(walls), min(cpus)


def compiled(members):
    return [torch.compile(m, dynamic=True) for m in members]


def quantised(members):
    from torch.ao.quantization import quantize_dynamic

    return [quantize_dynamic(m, {torch.nn.Linear}, dtype=torch.qint8) for m in members]


def plot(result: dict) -> Path:
    """Molecules/s (CPU time) and max |Δ| vs float per variant, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["variants"])
    rows = [result["variants"][n] for n in names]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.bar(names, [r["molecules_per_s_cpu"] for r in rows], color="tab:blue")
    a.set_ylabel("molecules / CPU-second (1 thread)")
    b.bar(names[1:], [max(r["max_abs_delta_prediction"], 1e-9) for r in rows[1:]], color="tab:red")
    b.set_yscale("log")
    b.set_ylabel("max |Δ| vs float (target units)")
    fig.suptitle(
        f"{result['model']} ({result['members']} members), {result['molecules']} HIV molecules"
    )
    fig.tight_layout()
    PLOTS.mkdir(parents=True, exist_ok=True)
    path = PLOTS / "inference_variants.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="solubility")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants", nargs="+", default=["float", "compile", "int8", "onnxruntime"]
    )
    parser.add_argument("--plot-only", action="store_true", help="plot the stored result")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.plot_only:
        log.info("wrote %s", plot(load_result("inference_variants")))
        return
    torch.set_num_threads(1)
    predictor = Predictor.from_pretrained(args.model)
    task = predictor.config.task
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"].head(args.n)
    t0 = time.perf_counter()
    items = predictor.featurize(smiles.tolist())
    featurise_s = time.perf_counter() - t0
    graphs = [g for g in items if not isinstance(g, Exception)]
    log.info("%d of %d molecules featurised in %.1f s", len(graphs), len(smiles), featurise_s)

    results: dict[str, dict] = {}
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.variants:
            setup = time.perf_counter()
            if name == "float":
                members = predictor.members
            elif name == "compile":
                members = compiled(predictor.members)
                forward_members(members, graphs[:64], device=torch.device("cpu"))  # compile
            elif name == "int8":
                members = quantised(predictor.members)
            elif name == "onnxruntime":
                export = export_onnx(predictor.directory, Path(tmp) / "onnx")
                members = load_onnx_members(
                    predictor.directory,
                    predictor.config,
                    predictor.members,
                    location=export.metadata.parent,
                    threads=1,
                )
            else:
                raise SystemExit(f"unknown variant {name}")
            setup_s = time.perf_counter() - setup
            raw, wall, cpu = timed(members, graphs, args.repeats)
            if reference is None:
                if name != "float":
                    raise SystemExit("the first variant must be float (the reference)")
                reference = raw
            mean = to_target_space(raw, task).mean(0)
            ref_mean = to_target_space(reference, task).mean(0)
            results[name] = {
                "max_abs_delta_prediction": float(np.abs(mean - ref_mean).max()),
                "max_abs_delta_raw_member_output": float(np.abs(raw - reference).max()),
                "molecules_per_s_wall": round(len(graphs) / wall, 1),
                "molecules_per_s_cpu": round(len(graphs) / cpu, 1),
                "best_wall_s": round(wall, 3),
                "best_cpu_s": round(cpu, 3),
                "setup_s": round(setup_s, 2),
            }
            log.info("%s: %s", name, results[name])
    path = save_result(
        "inference_variants",
        {
            "model": args.model,
            "members": len(predictor.members),
            "molecules": len(graphs),
            "data": "data/moleculenet/hiv.csv.gz (first rows)",
            "threads": 1,
            "repeats": args.repeats,
            "featurise_s": round(featurise_s, 2),
            "variants": results,
        },
    )
    log.info("wrote %s and %s", path, plot(load_result("inference_variants")))


if __name__ == "__main__":
    main()
