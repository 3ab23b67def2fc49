"""A chemist's small assay: fine-tuning the foundation model against training from scratch.

The assays of :mod:`benchmarks.finetune_assay` (the shipped models' scaffold test molecules, cut
into a scaffold-disjoint fine-tune half and evaluation half; 32–210 molecules to learn from),
each learnt by:

* ``foundation``: ``molprop finetune`` without ``--from`` (the shipped foundation model, a fresh
  head for the assay's own column), what a user's assay CSV gets by default;
* ``scratch``: ``molprop train --init none`` on the same molecules (its defaults, random start);
* ``shipped``: the shipped single-property model as it is, trained on the rest of that
  property's data (a model the chemist would not have for a new assay: the upper reference).

Every training as :mod:`benchmarks.finetune_assay` runs them (3 members, 40 epochs, early
stopping on a scaffold 15 % of the fine-tune half), 1 thread, one at a time::

    python -m benchmarks.foundation_assay [--models solubility ...] [--seeds 0 1 2]
    # -> benchmarks/results/foundation_assay.json, docs/results/foundation_assay.md + .png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, RESULTS, WORK
from benchmarks.finetune_assay import ASSAY_COLUMN, COMMON, MODELS, assay_halves, cli, scores
from molprop.pretrained_recipes import RECIPES

METHODS = ("shipped", "foundation", "scratch")


def run_one(name: str, seed: int, work: Path) -> dict:
    target = RECIPES[name].target
    fine, evaluation = assay_halves(name, seed)
    work.mkdir(parents=True, exist_ok=True)
    csv = work / "assay.csv"
    fine.rename(columns={target: ASSAY_COLUMN}).to_csv(csv, index=False)
    evaluation = evaluation.rename(columns={target: ASSAY_COLUMN})
    base = ["--data", str(csv), "--target-columns", ASSAY_COLUMN, "--seed", str(seed), *COMMON]
    result: dict = {
        "model": name,
        "seed": seed,
        "n_finetune": len(fine),
        "n_eval": len(evaluation),
        "methods": {"shipped": scores(name, ASSAY_COLUMN, target, evaluation)},
        "seconds": {},
    }
    runs = {"foundation": ["finetune", *base], "scratch": ["train", "--init", "none", *base]}
    for method, args in runs.items():
        out = work / method
        if not (out / "config.json").is_file():
            result["seconds"][method] = round(
                cli([*args, "--out", str(out)], work / f"{method}.log"), 1
            )
        result["methods"][method] = scores(out, ASSAY_COLUMN, ASSAY_COLUMN, evaluation)
    print(name, seed, {m: round(v["rmse"], 3) for m, v in result["methods"].items()})
    return result


def summarise(results: list[dict]) -> dict:
    summary = {}
    for name in sorted({r["model"] for r in results}):
        rows = [r for r in results if r["model"] == name]
        summary[name] = {
            "n_finetune": [r["n_finetune"] for r in rows],
            **{
                m: {
                    "rmse_mean": float(np.mean([r["methods"][m]["rmse"] for r in rows])),
                    "rmse_std": float(np.std([r["methods"][m]["rmse"] for r in rows])),
                }
                for m in METHODS
            },
            "foundation_beats_scratch_seeds": sum(
                r["methods"]["foundation"]["rmse"] < r["methods"]["scratch"]["rmse"] for r in rows
            ),
            "seeds": len(rows),
        }
    return summary


def write_page(summary: dict, path: Path) -> None:
    lines = [
        "# A small assay: the foundation model against training from scratch",
        "",
        "`python -m benchmarks.foundation_assay` (numbers: `benchmarks/results/"
        "foundation_assay.json`). Each assay is half of a shipped model's scaffold test "
        "molecules (scaffold-disjoint halves, per seed); RMSE on the other half. `shipped` is the "
        "single-property model trained on the rest of that property's data: a reference a "
        "chemist would not have for a new assay.",
        "",
        "| assay (from) | molecules learnt from | shipped | foundation fine-tune | scratch | "
        "foundation better than scratch |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        cell = {m: f"{s[m]['rmse_mean']:.3f} ± {s[m]['rmse_std']:.3f}" for m in METHODS}
        lines.append(
            f"| {name} | {min(s['n_finetune'])}–{max(s['n_finetune'])} | {cell['shipped']} | "
            f"{cell['foundation']} | {cell['scratch']} | "
            f"{s['foundation_beats_scratch_seeds']} of {s['seeds']} seeds |"
        )
    lines += ["", "![foundation against scratch](foundation_assay.png)", ""]
    path.write_text("\n".join(lines))


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.finetune_assay import method_bars

    names = sorted({r["model"] for r in results})
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.4))
    for ax, name in zip(np.atleast_1d(axes), names, strict=True):
        rows = [r for r in results if r["model"] == name]
        method_bars(ax, rows, METHODS, ["0.6", "tab:green", "tab:orange"])
        ax.set_title(f"{name} ({len(rows)} seeds)", fontsize=9)
    fig.suptitle("Small assay: fine-tuning the foundation model vs training from scratch")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--work", type=Path, default=WORK / "foundation_assay")
    a = p.parse_args(argv)
    results = [
        run_one(name, seed, a.work / name / f"seed{seed}") for name in a.models for seed in a.seeds
    ]
    summary = summarise(results)
    (RESULTS / "foundation_assay.json").write_text(
        json.dumps({"runs": results, "summary": summary}, indent=2) + "\n"
    )
    docs = REPO / "docs" / "results"
    plot(results, docs / "foundation_assay.png")
    write_page(summary, docs / "foundation_assay.md")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
