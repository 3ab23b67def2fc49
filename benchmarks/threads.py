"""OpenMP thread settings on a small, busy machine: 1 vs 2 threads, idle vs a competing busy
process, libgomp's default spin-wait vs ``OMP_WAIT_POLICY=PASSIVE`` (what ``import molprop``
now sets when the variable is unset).

Workload: the first 1,000 SMILES of data/moleculenet/delaney_chemprop.csv.gz predicted by the
shipped ``solubility`` model (3-member ESA ensemble + applicability domain), two ways, each in a
fresh process:

* ``api``: ``Predictor.from_pretrained(model).predict(smiles)``, timed in the process (model
  loading excluded; a 20-molecule warm-up first);
* ``cli``: ``molprop predict`` CSV in -> CSV out, wall time of the whole process.

``policy``: ``passive`` runs the code as shipped (``OMP_WAIT_POLICY`` unset, so molprop sets
PASSIVE before torch loads libgomp); ``spin`` imports torch *before* molprop, so libgomp starts
with its default spin-wait (the behaviour before this setting existed). ``busy``: a pure-Python
spin loop pinned to the last CPU runs for the duration of the measurement. ``threads``:
``OMP_NUM_THREADS`` (= torch's intra-op threads). Every run has a wall-clock limit (``--limit``,
default 240 s); a run over it is recorded as timed out. ``--repeats N`` runs the whole grid N
times (interleaved, so slow drifts in the machine's load hit every configuration alike); the
summary gives each configuration's median, ``runs`` every measurement with the 1-minute load
average before it.

If the shipped model cannot be loaded by this molprop (e.g. its featuriser version is older
than the code's, until ``make pretrained`` has rebuilt it), a stand-in with the shipped
model's exact configuration and random weights is used and recorded (speed does not depend on
the weights).

    .venv/bin/python -m benchmarks.threads            # -> benchmarks/results/threads.json
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from benchmarks.common import REPO, WORK, run_process, save_result

SOURCE = REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"
N_MOLECULES = 1000

_API = """
import sys, time
if sys.argv[1] == "spin":
    import torch  # libgomp starts before molprop can set OMP_WAIT_POLICY
from molprop.inference import Predictor
import pandas as pd
import torch
smiles = pd.read_csv(sys.argv[3])["smiles"].tolist()
p = Predictor.from_pretrained(sys.argv[2])
p.predict(smiles[:20])
start = time.perf_counter()
out = p.predict(smiles)
seconds = time.perf_counter() - start
assert len(out) == len(smiles)
print("RESULT", seconds, torch.get_num_threads(), (out["status"] == "ok").sum())
"""

_CLI = """
import sys
if sys.argv[1] == "spin":
    import torch  # noqa: F401  (as above)
from molprop.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def workload() -> Path:
    path = WORK / "threads" / f"esol_{N_MOLECULES}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.read_csv(SOURCE)[["smiles"]].head(N_MOLECULES)
    frame.to_csv(path, index=False)
    return path


def model_dir(name: str) -> tuple[Path, str]:
    """-> (artifact directory, description). A stand-in replaces an unloadable shipped model."""
    from molprop.artifact.store import load_config, save_artifact
    from molprop.errors import ConfigError
    from molprop.featurize import FeaturizerConfig, build_featurizer
    from molprop.inference import Predictor, resolve_model
    from molprop.training.fit import build_model

    directory = resolve_model(name)
    try:
        Predictor.from_pretrained(directory)
        return directory, f"shipped {name} ({directory})"
    except ConfigError as exc:
        reason = str(exc)
    shipped = load_config(directory)
    fc = FeaturizerConfig(kind=shipped.featurizer.kind, params=shipped.featurizer.params)
    graph = build_featurizer(fc).from_smiles("CCO")
    mc = dataclasses.replace(
        shipped.model, node_dim=graph.x.shape[1], edge_dim=graph.edge_attr.shape[1]
    )
    config = dataclasses.replace(shipped, model=mc, featurizer=fc)
    out = WORK / "threads" / f"standin_{name}"
    save_artifact(out, config, [build_model(mc, seed) for seed in range(shipped.n_members)])
    domain = directory / "domain.safetensors"
    if domain.exists():
        (out / "domain.safetensors").write_bytes(domain.read_bytes())
    return out, (
        f"stand-in for shipped {name}: same config ({shipped.n_members} members, "
        f"hidden {mc.hidden_dim}, layers {mc.layers!r}), random weights, shipped "
        f"domain file; shipped model not loadable: {reason}"
    )


class Busy:
    """A pure-Python spin loop on the last CPU (context manager)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.proc = enabled, None

    def __enter__(self) -> Busy:
        if self.enabled:
            cpu = max(os.sched_getaffinity(0))
            code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
            self.proc = subprocess.Popen([sys.executable, "-c", code])
            time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def measure(
    kind: str, policy: str, threads: int, busy: bool, model: Path, source: Path, limit: float
) -> dict:
    env = {
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "MOLPROP_NO_PROGRESS": "1",
    }
    if kind == "api":
        cmd = [sys.executable, "-c", _API, policy, str(model), str(source)]
    else:
        out = WORK / "threads" / f"out_{policy}_{threads}_{int(busy)}.csv"
        cmd = [
            sys.executable,
            "-c",
            _CLI,
            policy,
            "predict",
            "--model",
            str(model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--no-progress",
        ]
    with Busy(busy):
        res = run_process(cmd, env=env, timeout=limit)
    row = {
        "path": kind,
        "policy": policy,
        "threads": threads,
        "busy": busy,
        "load_1min_before": round(os.getloadavg()[0], 2),
    }
    if res.seconds >= limit:
        return {**row, "seconds": None, "timed_out": True, "limit_s": limit}
    if res.returncode:
        raise RuntimeError(f"{row}: exit {res.returncode}\n{res.stderr[-2000:]}")
    if kind == "api":
        line = [x for x in res.stdout.splitlines() if x.startswith("RESULT")][-1].split()
        seconds, torch_threads, ok = float(line[1]), int(line[2]), int(line[3])
        row.update(torch_threads=torch_threads, ok_rows=ok)
    else:
        seconds = res.seconds
    return {
        **row,
        "seconds": round(seconds, 2),
        "molecules_per_s": round(N_MOLECULES / seconds, 1),
        "cpu_s": round(res.cpu_seconds, 2),
        "timed_out": False,
    }


def summarise(rows: list[dict]) -> list[dict]:
    """Median seconds per (path, busy, threads, policy); a timed-out run counts as the limit."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["path"], row["busy"], row["threads"], row["policy"]), []).append(row)
    out = []
    for (kind, busy, threads, policy), group in groups.items():
        seconds = [r["limit_s"] if r["timed_out"] else r["seconds"] for r in group]
        median = statistics.median(seconds)
        out.append(
            {
                "path": kind,
                "busy": busy,
                "threads": threads,
                "policy": policy,
                "median_s": round(median, 2),
                "min_s": min(seconds),
                "max_s": max(seconds),
                "molecules_per_s": round(N_MOLECULES / median, 1),
                "n": len(group),
                "timed_out": sum(r["timed_out"] for r in group),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="solubility", help="model name or directory")
    parser.add_argument("--paths", nargs="+", default=["api", "cli"], choices=["api", "cli"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument(
        "--policies", nargs="+", default=["passive", "spin"], choices=["passive", "spin"]
    )
    parser.add_argument("--limit", type=float, default=240.0, help="seconds per run")
    parser.add_argument("--repeats", type=int, default=1, help="passes over the grid")
    parser.add_argument("--result-name", default="threads")
    args = parser.parse_args(argv)
    source = workload()
    model, description = model_dir(args.model)
    # importing molprop (above) set OMP_WAIT_POLICY=PASSIVE here; the children must start
    # without it (and without a GOMP_SPINCOUNT), so that the policy column alone decides
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        os.environ.pop(name, None)
    rows = []
    for repeat in range(args.repeats):
        for kind in args.paths:
            for busy in (False, True):
                for threads in args.threads:
                    for policy in args.policies:
                        row = measure(kind, policy, threads, busy, model, source, args.limit)
                        row["repeat"] = repeat
                        print(row, flush=True)
                        rows.append(row)
    path = save_result(
        args.result_name,
        {
            "workload": f"first {N_MOLECULES} SMILES of {SOURCE.relative_to(REPO)}",
            "model": description,
            "limit_s": args.limit,
            "repeats": args.repeats,
            "summary": summarise(rows),
            "runs": rows,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
