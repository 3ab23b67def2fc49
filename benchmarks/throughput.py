"""Prediction throughput, end to end: CSV of SMILES in -> CSV of predictions out, as whole processes.

``molprop predict`` vs ``chemprop predict`` on the first N HIV SMILES that RDKit parses
(chemprop stops on unparsable rows), the same thread count, repeats interleaved
(molprop, chemprop, molprop, ...) so machine load hits both alike; medians reported.
Time includes interpreter start, imports, model loading, featurisation, prediction, writing.
Models: the ESOL models trained by ``benchmarks.accuracy`` (seed 0), i.e. each tool's default
size (``molprop``, ``chemprop``), ``molprop_small``: ESA with the shipped models' architecture
(``benchmarks.accuracy.SMALL_FLAGS``, one member, trained on ESOL by the grid), and ``molprop_shipped``: the shipped ``pretrained/solubility``
model (ESA hidden 64, trained on ESOL, with its applicability-domain check), which is what
``molprop predict --model solubility`` and the service run; ``chemprop3``: a 3-member chemprop
ensemble (the grid's ESOL chemprop models of seeds 0, 3, 4), to compare the shipped 3-member
models with.

Usage: ``python -m benchmarks.throughput --n 10000 --repeats 3``
"""

from __future__ import annotations

import argparse
import logging
import statistics

import pandas as pd
from rdkit import Chem, RDLogger

from benchmarks.common import (
    REPO,
    VENV_BIN,
    WORK,
    chemprop_env,
    run_process,
    save_result,
    thread_env,
)

log = logging.getLogger(__name__)


def write_input(n: int):
    RDLogger.DisableLog("rdApp.*")
    smiles = pd.read_csv(REPO / "data" / "moleculenet" / "hiv.csv.gz")["smiles"]
    ok = [s for s in smiles[: int(n * 1.01) + 50] if Chem.MolFromSmiles(s) is not None][:n]
    path = WORK / "throughput" / f"hiv_{n}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"smiles": ok}).to_csv(path, index=False)
    return path, len(ok)


def commands(inp, threads: int) -> dict[str, tuple[list[str], dict]]:
    acc = WORK / "accuracy"
    out = WORK / "throughput"
    molprop = [
        str(VENV_BIN / "molprop"),
        "predict",
        "--model",
        str(acc / "ESOL_seed0_molprop_esa"),
        "--input",
        str(inp),
        "--smiles-column",
        "smiles",
        "--output",
        str(out / "molprop.csv"),
    ]
    small = [
        str(VENV_BIN / "molprop"),
        "predict",
        "--model",
        str(acc / "ESOL_seed0_molprop_esa_small"),
        "--input",
        str(inp),
        "--smiles-column",
        "smiles",
        "--output",
        str(out / "molprop_small.csv"),
    ]
    shipped = [
        str(VENV_BIN / "molprop"),
        "predict",
        "--model",
        str(REPO / "pretrained" / "solubility"),
        "--input",
        str(inp),
        "--smiles-column",
        "smiles",
        "--output",
        str(out / "molprop_shipped.csv"),
    ]
    chemprop = [
        str(VENV_BIN / "chemprop"),
        "predict",
        "-i",
        str(inp),
        "-s",
        "smiles",
        "--model-paths",
        str(acc / "ESOL_seed0_chemprop" / "model_0" / "best.pt"),
        "-o",
        str(out / "chemprop.csv"),
        "--num-workers",
        "0",
        "--accelerator",
        "cpu",
        "--devices",
        "1",
    ]
    # a 3-member chemprop ensemble (chemprop averages the models given to --model-paths): the
    # grid's ESOL models of seeds 0, 3 and 4 (to compare with the shipped 3-member models)
    chemprop3 = chemprop[:]
    at = chemprop3.index("--model-paths") + 1
    chemprop3[at : at + 1] = [
        str(acc / f"ESOL_seed{s}_chemprop" / "model_0" / "best.pt") for s in (0, 3, 4)
    ]
    chemprop3[chemprop3.index("-o") + 1] = str(out / "chemprop3.csv")
    return {
        "molprop": (molprop, thread_env(threads)),
        "chemprop": (chemprop, chemprop_env(threads)),
        "chemprop3": (chemprop3, chemprop_env(threads)),
        "molprop_small": (small, thread_env(threads)),
        "molprop_shipped": (shipped, thread_env(threads)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--tools", nargs="+", default=["molprop", "chemprop", "molprop_small", "molprop_shipped"]
    )
    p.add_argument("--result-name", default="throughput", help="results/<name>.json")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    inp, n = write_input(args.n)
    cmds = commands(inp, args.threads)
    runs: dict[str, list[dict]] = {t: [] for t in args.tools}
    for r in range(args.repeats):
        for tool in args.tools:
            cmd, env = cmds[tool]
            proc = run_process(cmd, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"{tool} predict failed: {proc.stderr[-1500:]}")
            rows = len(pd.read_csv(WORK / "throughput" / f"{tool}.csv"))
            runs[tool].append(
                {
                    "seconds": round(proc.seconds, 2),
                    "peak_rss_mb": round(proc.peak_rss_mb, 1),
                    "cpu_seconds": round(proc.cpu_seconds, 1),
                    "rows_out": rows,
                }
            )
            log.info(
                "repeat %d %s: %.1f s, %.0f MiB, %d rows",
                r,
                tool,
                proc.seconds,
                proc.peak_rss_mb,
                rows,
            )
    summary = {}
    for tool, rs in runs.items():
        med = statistics.median(x["seconds"] for x in rs)
        summary[tool] = {
            "median_seconds": med,
            "molecules_per_s": round(n / med, 1),
            "median_cpu_seconds": statistics.median(x.get("cpu_seconds", float("nan")) for x in rs),
            "median_peak_rss_mb": statistics.median(x["peak_rss_mb"] for x in rs),
        }
    save_result(
        args.result_name,
        {
            "n_molecules": n,
            "threads": args.threads,
            "runs": runs,
            "summary": summary,
            "commands": {t: " ".join(c[0]) for t, c in cmds.items()},
        },
    )
    log.info("%s", summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
