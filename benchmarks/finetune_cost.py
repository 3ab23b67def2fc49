"""Cost of using the foundation model: ``molprop finetune`` with its defaults on 1,000 molecules,
and whole-process prediction of 10,000 SMILES by the fine-tuned model against a chemprop v2 model
of CheMeleon's size.

1. Fine-tuning: ``molprop finetune --data TRAIN --target-columns y --out DIR`` (no ``--from``:
   the shipped foundation model with the fine-tuning defaults) on a seeded sample of ``--n-train``
   Lipophilicity molecules, as one whole process per repeat: wall and CPU seconds, peak RSS, the
   epochs run, and the stages read back from the artifact's ``metrics.json`` (the training loop,
   the rest of ``run_finetune``, and start-up + writing + calibration).
2. Prediction: a chemprop v2 model with ``--message-hidden-dim 2048 --depth 6`` (CheMeleon's
   encoder; its weights do not change its speed, so it is trained 1 epoch on 200 molecules just
   to get a model file) and the fine-tuned molprop model each predict the same ``--n-predict``
   drug-like SMILES (:func:`benchmarks.admet_throughput.sample`) as whole processes
   (``chemprop predict`` / ``molprop predict --model DIR``, their defaults), with the same thread
   limit, after one uncounted warm-up on 100 SMILES each, in alternating order (A B, B A, ...):
   ``--repeats`` runs each; min / median wall seconds, molecules / s, and the ratio of the
   medians. ``--profile`` adds one cProfile run of ``molprop predict`` (its top functions).

Targets: fine-tuning ≤ 300 s wall; molprop predicts ≥ 3× as many molecules / s as chemprop.
The load average is recorded before every run (the machine is shared)::

    python -m benchmarks.finetune_cost [--chemprop PATH] [--threads 2] [--repeats 2] \\
        [--stages finetune predict] [--profile]

writes ``benchmarks/results/finetune_cost.json`` (backs docs/results/foundation.md).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.common import (
    DATASETS,
    WORK,
    chemprop_env,
    load_result,
    run_process,
    save_result,
    thread_env,
)

NAME = "finetune_cost"
FINETUNE_TARGET_S = 300.0  # "≤ 5 min wall on this 2-core machine"
RATIO_TARGET = 3.0  # "≥ 3× faster than the CheMeleon-sized chemprop model"
CHEMELEON_SIZE = ("--message-hidden-dim", "2048", "--depth", "6")
CHEMPROP_COMMON = ("--num-workers", "0", "--accelerator", "cpu", "--devices", "1")
MOLPROP = (sys.executable, "-m", "molprop.cli.main")
TIMEOUT_S = 3 * 3600


# --- pure parts: summaries, stages, verdicts, the page's table ---------------------------------


def spread(values: Sequence[float]) -> dict[str, float | int]:
    """min / median / max of repeated measurements (seconds or rates)."""
    if not values:
        raise ValueError("no measurements")
    return {
        "n": len(values),
        "min": round(min(values), 2),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


def alternating(first: str, second: str, repeats: int) -> list[str]:
    """Run order for paired timings: A B, B A, A B, ... (each tool ``repeats`` times), so a
    drift in the machine's speed falls on both."""
    order: list[str] = []
    for i in range(repeats):
        order += [first, second] if i % 2 == 0 else [second, first]
    return order


def finetune_stages(metrics: dict[str, Any], process_wall_s: float) -> dict[str, Any]:
    """Where a ``molprop finetune`` process spent its wall time, from the artifact's
    ``metrics.json``: the members' training loops (``training.members[].seconds``), the rest of
    ``run_finetune`` (data, featurisation, evaluation, baselines: ``training.wall_seconds`` less
    the loops) and everything outside it (interpreter start, imports, writing the artifact, its
    calibration and domain)."""
    training = metrics.get("training", {})
    members = training.get("members", [])
    fit = sum(float(m.get("seconds", 0.0)) for m in members)
    epochs = sum(int(m.get("epochs_run", 0)) for m in members)
    inside = float(training.get("wall_seconds", 0.0))
    return {
        "training_loop_s": round(fit, 1),
        "rest_of_run_finetune_s": round(max(inside - fit, 0.0), 1),
        "outside_run_finetune_s": round(max(process_wall_s - inside, 0.0), 1),
        "epochs_run": [m.get("epochs_run") for m in members],
        "best_epoch": [m.get("best_epoch") for m in members],
        "s_per_epoch": round(fit / epochs, 2) if epochs else None,
        "split_sizes": training.get("sizes"),
    }


def verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """The two targets against the medians: met, or missed by how much."""
    out: dict[str, Any] = {}
    ft = result.get("finetune")
    if ft:
        median = ft["wall_s"]["median"]
        out["finetune"] = {
            "target_s": FINETUNE_TARGET_S,
            "median_wall_s": median,
            "met": median <= FINETUNE_TARGET_S,
            "times_target": round(median / FINETUNE_TARGET_S, 2),
        }
    pr = result.get("predict")
    if pr and {"molprop", "chemprop"} <= set(pr["tools"]):
        ratio = (
            pr["tools"]["chemprop"]["wall_s"]["median"] / pr["tools"]["molprop"]["wall_s"]["median"]
        )
        out["predict"] = {
            "target_ratio": RATIO_TARGET,
            "ratio_of_medians": round(ratio, 2),
            "met": ratio >= RATIO_TARGET,
        }
    return out


def table(result: dict[str, Any]) -> str:
    """The markdown table of docs/results/foundation.md's "Cost of using the foundation"."""
    rows = ["| what | target | measured (min / median) | verdict |", "|---|---|---|---|"]
    verdict = result.get("verdicts") or verdicts(result)

    def word(v: dict[str, Any]) -> str:
        return "**met**" if v["met"] else "**missed**"

    ft = result.get("finetune")
    if ft:
        w = ft["wall_s"]
        rows.append(
            f"| `molprop finetune`, defaults, {ft['n_molecules']:,} molecules, wall | "
            f"≤ {FINETUNE_TARGET_S:.0f} s | {w['min']:.0f} / {w['median']:.0f} s | "
            f"{word(verdict['finetune'])} ({verdict['finetune']['times_target']}× the target) |"
        )
    pr = result.get("predict")
    if pr:
        for tool in ("molprop", "chemprop"):
            t = pr["tools"].get(tool)
            if t is None:
                continue
            w, r = t["wall_s"], t["molecules_per_s"]
            rows.append(
                f"| `{tool} predict`, {pr['n_molecules']:,} SMILES, wall | | "
                f"{w['min']:.1f} / {w['median']:.1f} s ({r['max']:.0f} / {r['median']:.0f} mol/s) | |"
            )
        if "predict" in verdict:
            v = verdict["predict"]
            rows.append(
                f"| molprop / chemprop molecules per second (ratio of median walls) | "
                f"≥ {RATIO_TARGET:.0f}× | {v['ratio_of_medians']}× | {word(v)} |"
            )
    return "\n".join(rows)


#: cProfile rows that only wrap others (the interpreter, runpy, importlib): left out of the top
_WRAPPERS = ("<frozen ", "<string>", "builtins.exec", "builtins.__import__", "import_module")


def top_functions(profile: Path, n: int = 15) -> dict[str, Any]:
    """From a cProfile dump: the time spent importing (``_find_and_load``'s cumulative time) and
    the ``n`` functions with the most cumulative time, the import machinery and the interpreter's
    wrappers left out."""
    stats = pstats.Stats(str(profile))
    rows, imports = [], 0.0
    for (file, line, func), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():
        name = f"{Path(file).name}:{line}({func})"
        if func == "_find_and_load":
            imports = max(imports, cumtime)
        if any(w in name for w in _WRAPPERS):
            continue
        rows.append(
            {
                "function": name,
                "calls": calls,
                "tottime_s": round(tottime, 2),
                "cumtime_s": round(cumtime, 2),
            }
        )
    rows.sort(key=lambda r: r["cumtime_s"], reverse=True)
    return {
        "total_s": round(stats.total_tt, 2),
        "imports_s": round(imports, 2),
        "top_cumulative": rows[:n],
    }


# --- the runs ----------------------------------------------------------------------------------


def training_set(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` Lipophilicity molecules (seeded sample) as columns ``smiles``, ``y``."""
    spec = DATASETS["Lipophilicity"]
    frame = pd.read_csv(spec.path, usecols=[spec.smiles_column, spec.target_column])
    frame = frame.rename(columns={spec.smiles_column: "smiles", spec.target_column: "y"})
    return frame.sample(n=min(n, len(frame)), random_state=seed).reset_index(drop=True)


def prediction_smiles(n: int) -> pd.DataFrame:
    """``n`` drug-like SMILES that RDKit parses: the seeded sample of
    :func:`benchmarks.admet_throughput.sample` (10 % more drawn), its unparsable entries left out
    (``chemprop predict`` stops at the first one; molprop would answer it as a row with an error),
    so both tools predict the same molecules."""
    from rdkit import Chem, RDLogger

    from benchmarks.admet_throughput import sample

    RDLogger.DisableLog("rdApp.*")
    pool = sample(n + n // 10 + 10)
    ok = [Chem.MolFromSmiles(s) is not None for s in pool["smiles"]]
    kept = pool[ok].head(n).reset_index(drop=True)
    if len(kept) < n:
        raise SystemExit(f"only {len(kept)} parsable SMILES in the sample of {len(pool)}")
    return kept


def timed(cmd: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """One whole process: wall and CPU seconds, peak RSS, the load average before it."""
    load = os.getloadavg()[0]
    proc = run_process(cmd, env=env, timeout=TIMEOUT_S)
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}); see {log}")
    return {
        "wall_s": round(proc.seconds, 2),
        "cpu_s": round(proc.cpu_seconds, 2),
        "peak_rss_mb": round(proc.peak_rss_mb),
        "load_avg_1min_before": round(load, 2),
    }


def torch_threads(python: str, env: dict[str, str]) -> int | None:
    """``torch.get_num_threads()`` of ``python`` under ``env`` (what the timed processes got)."""
    code = "import torch; print(torch.get_num_threads())"
    done = subprocess.run(
        [python, "-c", code], env={**os.environ, **env}, capture_output=True, text=True
    )
    return int(done.stdout.strip()) if done.returncode == 0 else None


def run_finetunes(train_csv: Path, n: int, work: Path, env: dict, repeats: int) -> dict:
    runs = []
    for i in range(repeats):
        out = work / f"finetuned_{i}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [*MOLPROP, "finetune", "--data", str(train_csv), "--target-columns", "y"]
        cmd += ["--no-progress", "--out", str(out)]
        run = timed(cmd, env, work / f"finetune_{i}.log")
        metrics = json.loads((out / "metrics.json").read_text())
        run["stages"] = finetune_stages(metrics, run["wall_s"])
        run["test_rmse"] = metrics.get("test", {}).get("ensemble", {}).get("rmse")
        runs.append(run)
        print(f"finetune {i}: {run}", flush=True)
    return {
        "n_molecules": n,
        "command": "molprop finetune --data TRAIN --target-columns y --no-progress --out DIR",
        "wall_s": spread([r["wall_s"] for r in runs]),
        "cpu_s": spread([r["cpu_s"] for r in runs]),
        "runs": runs,
    }


def chemprop_model(exe: Path, train: pd.DataFrame, work: Path, env: dict) -> Path:
    """A CheMeleon-sized chemprop v2 model file (1 epoch on 200 molecules: only its size
    matters here)."""
    out = work / "chemprop_model"
    shutil.rmtree(out, ignore_errors=True)
    csv = work / "chemprop_train.csv"
    train.head(200).to_csv(csv, index=False)
    cmd = [str(exe), "train", "-i", str(csv), "-s", "smiles", "--target-columns", "y"]
    cmd += ["-t", "regression", "--epochs", "1", "--warmup-epochs", "0", *CHEMELEON_SIZE]
    cmd += ["-o", str(out)]
    cmd += [*CHEMPROP_COMMON]
    timed(cmd, env, work / "chemprop_train.log")
    found = sorted(out.glob("**/best*.pt")) or sorted(out.glob("**/*.pt"))
    if not found:
        raise SystemExit(f"chemprop wrote no .pt model under {out}")
    return found[0]


def predict_commands(
    exe: Path | None, chemprop_pt: Path | None, model_dir: Path, smiles: Path, out: Path
) -> dict[str, list[str]]:
    cmds = {
        "molprop": [*MOLPROP, "predict", "--model", str(model_dir), "--input", str(smiles)]
        + ["--smiles-column", "smiles", "--no-progress", "--output", str(out / "molprop.csv")]
    }
    if exe is not None and chemprop_pt is not None:
        cmds["chemprop"] = [str(exe), "predict", "-i", str(smiles), "-s", "smiles"]
        cmds["chemprop"] += ["--model-paths", str(chemprop_pt), "-o", str(out / "chemprop.csv")]
        cmds["chemprop"] += [*CHEMPROP_COMMON]
    return cmds


def run_predictions(
    cmds: dict[str, list[str]], envs: dict[str, dict], n: int, work: Path, repeats: int
) -> dict[str, Any]:
    smiles, warm = work / "predict_smiles.csv", work / "warmup_smiles.csv"
    for tool, cmd in cmds.items():  # warm-up (disk cache, compiled kernels): not counted
        warm_cmd = [str(warm) if c == str(smiles) else c for c in cmd]
        timed(warm_cmd, envs[tool], work / f"{tool}_warmup.log")
    runs: dict[str, list[dict]] = {tool: [] for tool in cmds}
    order = alternating(*cmds, repeats) if len(cmds) == 2 else list(cmds) * repeats
    for i, tool in enumerate(order):
        run = timed(cmds[tool], envs[tool], work / f"{tool}_predict_{i}.log")
        written = pd.read_csv(work / f"{tool}.csv", low_memory=False)
        run["rows_out"] = len(written)
        if "status" in written:
            run["rows_ok"] = int((written["status"] == "ok").sum())
        run["molecules_per_s"] = round(n / run["wall_s"], 1)
        runs[tool].append(run)
        print(f"predict {tool}: {run}", flush=True)
    tools = {
        tool: {
            "command": " ".join(Path(c).name if c.startswith("/") else c for c in cmds[tool]),
            "wall_s": spread([r["wall_s"] for r in rs]),
            "cpu_s": spread([r["cpu_s"] for r in rs]),
            "molecules_per_s": spread([r["molecules_per_s"] for r in rs]),
            "runs": rs,
        }
        for tool, rs in runs.items()
    }
    return {"n_molecules": n, "order": order, "tools": tools}


def profile_predict(cmd: list[str], env: dict, work: Path) -> dict[str, Any]:
    dump = work / "molprop_predict.prof"
    run = timed([*MOLPROP[:1], "-m", "cProfile", "-o", str(dump), *cmd[1:]], env, work / "prof.log")
    return {"wall_s": run["wall_s"], **top_functions(dump)}


def chemprop_exe(explicit: str | None) -> Path | None:
    from benchmarks.moleculeace import chemprop_bin

    return chemprop_bin(explicit)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chemprop", help="chemprop v2 executable (default: next to this Python)")
    p.add_argument("--n-train", type=int, default=1000)
    p.add_argument("--n-predict", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2, help="OMP / MKL / OpenBLAS threads")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--stages", nargs="+", choices=["finetune", "predict"], default=None)
    p.add_argument("--profile", action="store_true", help="one cProfile run of molprop predict")
    p.add_argument("--work", type=Path, default=WORK / NAME)
    a = p.parse_args(argv)
    stages = a.stages or ["finetune", "predict"]
    a.work.mkdir(parents=True, exist_ok=True)
    env = thread_env(a.threads)
    exe = chemprop_exe(a.chemprop)
    result: dict[str, Any] = dict(load_result(NAME) or {})  # a stage run alone keeps the other
    result.pop("machine", None)
    result["threads"] = {
        "env": {k: v for k, v in env.items() if k.endswith("_THREADS")},
        "torch_molprop": torch_threads(sys.executable, env),
        "torch_chemprop": None if exe is None else torch_threads(str(exe.parent / "python"), env),
    }
    train = training_set(a.n_train)
    train_csv = a.work / "train.csv"
    train.to_csv(train_csv, index=False)
    if "finetune" in stages:
        result["finetune"] = run_finetunes(train_csv, len(train), a.work, env, a.repeats)
        result["verdicts"] = verdicts(result)
        save_result(NAME, result)  # kept if a later stage fails
    if "predict" in stages:
        model_dir = a.work / "finetuned_0"
        if not (model_dir / "metrics.json").is_file():
            raise SystemExit(f"no fine-tuned model at {model_dir}: run --stages finetune first")
        smiles = prediction_smiles(a.n_predict)
        smiles.to_csv(a.work / "predict_smiles.csv", index=False)
        smiles.head(100).to_csv(a.work / "warmup_smiles.csv", index=False)
        envs = {"molprop": env, "chemprop": chemprop_env(a.threads)}
        pt = None
        if exe is None:
            print("no chemprop executable (--chemprop PATH): molprop alone", flush=True)
        else:
            pt = chemprop_model(exe, train, a.work, envs["chemprop"])
        cmds = predict_commands(exe, pt, model_dir, a.work / "predict_smiles.csv", a.work)
        result["predict"] = run_predictions(cmds, envs, len(smiles), a.work, a.repeats)
        result["predict"]["chemprop_model"] = "chemprop v2 train " + " ".join(CHEMELEON_SIZE)
        result["predict"]["smiles"] = (
            "benchmarks.admet_throughput.sample (seed 0), SMILES RDKit cannot parse left out"
        )
        if a.profile:
            result["predict"]["molprop_profile"] = profile_predict(cmds["molprop"], env, a.work)
    result["verdicts"] = verdicts(result)
    path = save_result(NAME, result)
    print(table(result))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
