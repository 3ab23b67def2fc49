"""Fine-tuning a shipped model on a held-out "assay": before / after.

The "in-house assay" is built from shipped data so that it is unseen by the shipped model: its
scaffold **test** split (``pretrained/<name>/split.csv``; no test molecule was used to train,
stop or calibrate the model). Those molecules are cut into two scaffold-disjoint halves (whole
Bemis-Murcko scaffold sets, seeded): the chemist's measured series (**fine-tune half**) and the
next compounds to predict (**evaluation half**, scaffolds seen by neither the shipped model nor
the fine-tuning). On the evaluation half, test RMSE of:

* ``shipped``: the shipped model as it is (before);
* ``finetune-keep-head``: ``molprop finetune --from NAME --keep-head`` on the fine-tune half
  (the same property: every weight starts from the shipped values, the head included);
* ``finetune``: ``molprop finetune --from NAME`` on the same molecules under the assay's own
  column name (``assay_value``), so the head starts fresh (what a user's assay CSV gets);
* ``scratch``: ``molprop train --init none`` on the fine-tune half alone with the shipped architecture
  (``--preset small``), the bar fine-tuning has to beat;
* gentler keep-head fine-tunes (:data:`GENTLE`): ``--lr 5e-5`` (a tenth of the default), and
  ``--strategy freeze-encoder`` (only the head trains).

Every training is the CLI as a user runs it (each command's own defaults: ``molprop finetune``
30 epochs, warm-up then decay; ``molprop train`` up to 120 epochs, plateau schedule, early
stopping; but 3 members like the shipped models, a scaffold 15 % of the fine-tune half as the
validation part, no test part), 1 thread, one at a time::

    python -m benchmarks.finetune_assay [--models solubility lipophilicity ...] [--seeds 0 1 2]
    # -> benchmarks/results/finetune_assay.json, docs/results/finetune_assay.png
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import REPO, RESULTS, WORK
from molprop.data.splits import scaffold_groups
from molprop.pretrained_recipes import PRETRAINED, RECIPES, labelled_table

MODELS = ("solubility", "lipophilicity", "hydration_free_energy")
ASSAY_COLUMN = "assay_value"
#: gentler keep-head fine-tunes: a tenth of the CLI's lr, or the encoder frozen
GENTLE = {
    "keep-head-lr5e-5": ["--lr", "5e-5"],
    "keep-head-frozen": ["--strategy", "freeze-encoder"],
}
METHODS = ("shipped", "finetune-keep-head", "finetune", "scratch", *GENTLE)
#: the fine-tunes (every method but the shipped model and scratch)
FINETUNES = ("finetune-keep-head", "finetune", *GENTLE)
#: every training: 3 members, each command's own epochs and schedule, validation on a scaffold
#: 15 %, no test part
COMMON = ["--ensemble-size", "3", "--split-type", "scaffold"]
COMMON += ["--split-sizes", "0.85", "0.15", "0", "--no-progress"]


def assay_halves(name: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shipped model's test molecules (smiles, target) -> (fine-tune half, evaluation half),
    scaffold-disjoint: shuffled scaffold sets fill the fine-tune half up to half the molecules."""
    recipe = RECIPES[name]
    table = labelled_table(recipe)
    split = pd.read_csv(PRETRAINED / name / "split.csv")
    rows = split.loc[split["split"] == "test", "row"].to_numpy()
    test = table.iloc[rows][[recipe.smiles_column, recipe.data_column]].reset_index(drop=True)
    test.columns = ["smiles", recipe.target]  # the data's column under the model's name
    return scaffold_halves(test, seed)


def scaffold_halves(table: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows of ``table`` (a ``smiles`` column) -> (fine-tune half, evaluation half),
    scaffold-disjoint: shuffled scaffold sets fill the fine-tune half up to half the molecules."""
    groups = scaffold_groups(table["smiles"].tolist())
    order = np.random.default_rng(seed).permutation(len(groups))
    fine: list[int] = []
    for g in order:
        if len(fine) >= len(table) / 2:
            break
        fine.extend(groups[g])
    mask = np.zeros(len(table), dtype=bool)
    mask[fine] = True
    return table[mask].reset_index(drop=True), table[~mask].reset_index(drop=True)


def rmse(pred: np.ndarray, true: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred - true) ** 2)))


def scores(model_dir: str | Path, target: str, column: str, data: pd.DataFrame) -> dict:
    from molprop import Predictor

    out = Predictor.from_pretrained(model_dir).predict(data["smiles"].tolist(), interval=None)
    ok = (out["status"] == "ok").to_numpy()
    return score(out[column].to_numpy()[ok], data[target].to_numpy()[ok])


def score(pred: np.ndarray, true: np.ndarray) -> dict:
    """RMSE, MAE and count of predictions against labels."""
    return {"rmse": rmse(pred, true), "mae": float(np.mean(np.abs(pred - true))), "n": len(true)}


def cli(args: list[str], log: Path) -> float:
    """Run ``molprop ARGS`` (1 thread) -> seconds; stops the benchmark if it fails."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}
    start = time.perf_counter()
    with open(log, "w") as fh:
        res = subprocess.run(
            [sys.executable, "-m", "molprop.cli.main", *args], env=env, stdout=fh, stderr=fh
        )
    if res.returncode != 0:
        raise SystemExit(f"molprop {args[0]} failed ({res.returncode}); see {log}")
    return time.perf_counter() - start


#: written next to a model a run trained: the command and the data it was trained with
TRAINED_WITH = "bench_trained_with.json"


def train_once(args: list[str], out: Path, log: Path) -> float | None:
    """Train ``molprop ARGS --out OUT`` unless ``out`` holds a model trained by exactly this
    command on exactly this data (a kept work directory after an interrupted run) -> seconds,
    or None when reused. A model left by another command (former defaults, other data) is
    replaced, never reused."""
    data = Path(args[args.index("--data") + 1]) if "--data" in args else None
    wanted = {"args": args, "data": data.read_text() if data is not None else None}
    marker = out / TRAINED_WITH
    if (out / "config.json").is_file() and marker.is_file():
        if json.loads(marker.read_text()) == wanted:
            return None
    if out.exists():
        shutil.rmtree(out)
    seconds = cli([*args, "--out", str(out)], log)
    marker.write_text(json.dumps(wanted))
    return seconds


def run_one(name: str, seed: int, work: Path) -> dict:
    recipe = RECIPES[name]
    target = recipe.target
    fine, evaluation = assay_halves(name, seed)
    work.mkdir(parents=True, exist_ok=True)
    fine_csv = work / "assay_finetune.csv"
    fine.to_csv(fine_csv, index=False)
    renamed_csv = work / "assay_finetune_own_name.csv"  # the assay's own column: a fresh head
    fine.rename(columns={target: ASSAY_COLUMN}).to_csv(renamed_csv, index=False)
    print(f"{name} seed {seed}: {len(fine)} fine-tune, {len(evaluation)} evaluation molecules")
    result: dict = {
        "model": name,
        "seed": seed,
        "n_finetune": len(fine),
        "n_eval": len(evaluation),
        "methods": {"shipped": scores(name, target, target, evaluation)},
        "seconds": {},
    }
    print(f"  shipped: RMSE {result['methods']['shipped']['rmse']:.4f}")
    base = ["--target-columns", target, "--seed", str(seed), *COMMON]
    same, own = ["--data", str(fine_csv), *base], ["--data", str(renamed_csv), *base]
    own[own.index(target)] = ASSAY_COLUMN
    runs = {  # method -> (command, the column it predicts)
        "finetune-keep-head": (["finetune", "--from", name, "--keep-head", *same], target),
        "finetune": (["finetune", "--from", name, *own], ASSAY_COLUMN),
        "scratch": (["train", "--init", "none", "--preset", "small", *same], target),
    }
    for method, extra in GENTLE.items():
        runs[method] = (["finetune", "--from", name, "--keep-head", *same, *extra], target)
    for method, (args, column) in runs.items():
        out = work / method
        seconds = train_once(args, out, work / f"{method}.log")
        if seconds is not None:
            result["seconds"][method] = round(seconds, 1)
        result["methods"][method] = scores(out, target, column, evaluation)
        print(f"  {method}: RMSE {result['methods'][method]['rmse']:.4f}")
    return result


def method_bars(ax, rows: list[dict], methods: Sequence[str], colors: list[str]) -> None:
    """One bar per method: mean evaluation RMSE over the runs ``rows`` (± std where there are
    several), each run a dot."""
    vals = np.array([[r["methods"][m]["rmse"] for m in methods] for r in rows])
    ax.bar(
        range(len(methods)),
        vals.mean(0),
        yerr=vals.std(0) if len(rows) > 1 else None,
        color=colors,
        capsize=3,
    )
    for i, v in enumerate(vals.T):
        ax.scatter([i] * len(v), v, color="k", s=8, zorder=3)
    ax.set_xticks(range(len(methods)), methods, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("RMSE on the evaluation half")


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MODELS), figsize=(4 * len(MODELS), 3.6))
    for ax, name in zip(np.atleast_1d(axes), MODELS, strict=False):
        rows = [r for r in results if r["model"] == name]
        if not rows:
            continue
        colors = ["0.6", "tab:blue", "tab:cyan", "tab:orange", "tab:green", "tab:olive"]
        method_bars(ax, rows, METHODS, colors)
        ax.set_title(f"{name} ({len(rows)} seeds)", fontsize=9)
    fig.suptitle("Fine-tuning the shipped models on an unseen assay (their scaffold test split)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--work", type=Path, default=WORK / "finetune_assay")
    p.add_argument("--json", type=Path, default=RESULTS / "finetune_assay.json")
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "results" / "finetune_assay.png")
    a = p.parse_args(argv)
    results = []
    for name in a.models:
        for seed in a.seeds:
            results.append(run_one(name, seed, a.work / name / f"seed{seed}"))
    summary = {}
    for name in a.models:
        rows = [r for r in results if r["model"] == name]
        summary[name] = {
            m: {
                "rmse_mean": float(np.mean([r["methods"][m]["rmse"] for r in rows])),
                "rmse_std": float(np.std([r["methods"][m]["rmse"] for r in rows])),
            }
            for m in METHODS
        }
        best = min(FINETUNES, key=lambda m: summary[name][m]["rmse_mean"])
        summary[name]["best_finetune"] = best
        summary[name]["better_than_shipped_every_seed"] = {
            m: all(r["methods"][m]["rmse"] < r["methods"]["shipped"]["rmse"] for r in rows)
            for m in FINETUNES
        }
    a.json.write_text(json.dumps({"runs": results, "summary": summary}, indent=2) + "\n")
    plot(results, a.plot)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
