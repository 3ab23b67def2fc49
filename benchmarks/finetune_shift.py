"""Fine-tuning a shipped model on an assay with a real shift: before / after.

:mod:`benchmarks.finetune_assay` fine-tunes on the model's own test molecules *with the training
assay's labels*: no shift, so nothing for fine-tuning to learn (the target missed there). A
chemist's in-house assay measures the same property by another protocol, on other chemistry. Two
such assays are built from shipped public data, each unseen by the shipped model:

* ``homo_lumo_gap`` -> **PCQM4Mv2 gap** (``shared/data/pcqm4mv2/pcqm4mv2-2k.csv``, 1,999 PubChem
  molecules, DFT HOMO-LUMO gap in eV at B3LYP/6-31G* on PM6-optimised geometries). The shipped
  model learnt QM9's gap (B3LYP/6-31G(2df,p) on B3LYP geometries, molecules of at most 9 heavy
  atoms): another basis, other geometries, larger molecules. Molecules whose canonical SMILES is
  in the model's training table are dropped (counted in the results).
* ``hydration_free_energy`` -> **FreeSolv calculated** (``data/moleculenet/FreeSolv.csv.gz``,
  column ``calc``: alchemical free-energy calculations, GAFF / TIP3P), on the shipped model's
  scaffold **test** molecules only, whose *experimental* values trained the model elsewhere.

Each assay's molecules are cut into scaffold-disjoint halves (seeded, as in
:func:`benchmarks.finetune_assay.scaffold_halves`): a fine-tune half (the chemist's measured
series) and an evaluation half (the next compounds). RMSE on the evaluation half of:

* ``shipped``: the shipped model's prediction taken as the assay value (**before**);
* ``shipped-linear``: ``a + b * shipped`` with a, b least-squares on the fine-tune half (the cheap
  recalibration a fine-tune must also beat);
* ``finetune-keep-head``: ``molprop finetune --from NAME --keep-head`` (the assay values under
  the model's own target column: same quantity, every weight starts shipped) (**after**);
* ``finetune``: ``molprop finetune --from NAME`` with the assay under its own column name (fresh
  head);
* ``scratch``: ``molprop train --init none`` (the CLI default architecture, random start) on the fine-tune half.

Every training is the CLI with its defaults (each command's own epochs and schedule) except 3
members (as shipped), validation on a scaffold 15 % of the fine-tune half, 1 thread::

    python -m benchmarks.finetune_shift [--assays pcqm4mv2_gap freesolv_calc] [--seeds 0 1 2]
    # -> benchmarks/results/finetune_shift.json, docs/results/finetune_shift.png
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from rdkit import Chem, RDLogger

from benchmarks.common import REPO, RESULTS, WORK
from benchmarks.finetune_assay import (
    ASSAY_COLUMN,
    COMMON,
    method_bars,
    rmse,
    scaffold_halves,
    score,
    train_once,
)
from molprop.pretrained_recipes import DATA, PRETRAINED, RECIPES, load_data

SHARED = REPO.parent / "shared" / "data"
METHODS = ("shipped", "shipped-linear", "finetune-keep-head", "finetune", "scratch")
TRAINED = ("finetune-keep-head", "finetune", "scratch")


def canonical(smiles: str) -> str | None:
    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToSmiles(Chem.RemoveHs(mol))


def pcqm4mv2_gap() -> tuple[pd.DataFrame, dict]:
    """PCQM4Mv2 molecules (plain canonical SMILES, no H, no coordinates) and their gap, without
    those in the shipped homo_lumo_gap model's training table."""
    RDLogger.DisableLog("rdApp.*")
    raw = pd.read_csv(SHARED / "pcqm4mv2" / "pcqm4mv2-2k.csv")
    smiles = [canonical(s) for s in raw["smiles"]]
    table = pd.DataFrame({"smiles": smiles, "assay": raw["homo"].astype(float)})
    parsed = table["smiles"].notna()
    known = load_data(RECIPES["homo_lumo_gap"])
    trained = {canonical(s) for s in known["smiles"]}
    overlap = table["smiles"].isin(trained)
    keep = parsed & ~overlap
    info = {
        "source": "shared/data/pcqm4mv2/pcqm4mv2-2k.csv (column homo = PCQM4Mv2 gap, eV)",
        "rows": len(raw),
        "unparsed": int((~parsed).sum()),
        "in_training_table": int(overlap.sum()),
    }
    return table[keep].reset_index(drop=True), info


def freesolv_calc() -> tuple[pd.DataFrame, dict]:
    """The shipped hydration_free_energy model's scaffold test molecules, with FreeSolv's
    calculated (not experimental) hydration free energy."""
    recipe = RECIPES["hydration_free_energy"]
    shipped = pd.read_csv(DATA / recipe.data)
    full = pd.read_csv(REPO / "data" / "moleculenet" / "FreeSolv.csv.gz")
    if not (full["smiles"].tolist() == shipped[recipe.smiles_column].tolist()):
        raise SystemExit("FreeSolv.csv.gz and the recipe's table differ in row order")
    split = pd.read_csv(PRETRAINED / "hydration_free_energy" / "split.csv")
    rows = split.loc[split["split"] == "test", "row"].to_numpy()
    table = pd.DataFrame(
        {"smiles": full["smiles"].iloc[rows].to_numpy(), "assay": full["calc"].iloc[rows]}
    ).reset_index(drop=True)
    expt = full["expt"].iloc[rows].to_numpy()
    info = {
        "source": "data/moleculenet/FreeSolv.csv.gz (column calc, kcal/mol), test split rows",
        "rows": len(table),
        "calc_vs_expt_rmse": rmse(table["assay"].to_numpy(), expt),
    }
    return table, info


@dataclass(frozen=True)
class Assay:
    name: str
    model: str  # the shipped model it is fine-tuned from
    load: Callable[[], tuple[pd.DataFrame, dict]]


ASSAYS = {
    a.name: a
    for a in (
        Assay("pcqm4mv2_gap", "homo_lumo_gap", pcqm4mv2_gap),
        Assay("freesolv_calc", "hydration_free_energy", freesolv_calc),
    )
}


def predictions(model_dir: str | Path, column: str, smiles: list[str]) -> np.ndarray:
    from molprop import Predictor

    out = Predictor.from_pretrained(model_dir).predict(smiles, interval=None)
    bad = out[out["status"] != "ok"]
    if len(bad):
        raise SystemExit(f"{model_dir}: {len(bad)} rows not predicted: {bad['error'].iloc[0]}")
    return out[column].to_numpy(dtype=float)


def predictable(table: pd.DataFrame, model: str) -> tuple[pd.DataFrame, dict]:
    """The assay's molecules that the shipped ``model`` answers, and how many it refuses
    (elements it was not trained on, e.g. germanium for the QM9 model) with the first reason:
    a user gets those as per-row errors, so they are left out of every method alike."""
    from molprop import Predictor

    out = Predictor.from_pretrained(model).predict(table["smiles"].tolist(), interval=None)
    ok = (out["status"] == "ok").to_numpy()
    refused = out.loc[~ok, "error"]
    info = {"refused_by_model": int((~ok).sum())}
    if len(refused):
        info["refused_reason"] = str(refused.iloc[0])
    return table[ok].reset_index(drop=True), info


def run_one(assay: Assay, table: pd.DataFrame, seed: int, work: Path) -> dict:
    target = RECIPES[assay.model].target
    fine, evaluation = scaffold_halves(table, seed)
    work.mkdir(parents=True, exist_ok=True)
    same_csv, own_csv = work / "assay_same_column.csv", work / "assay_own_column.csv"
    fine.rename(columns={"assay": target}).to_csv(same_csv, index=False)
    fine.rename(columns={"assay": ASSAY_COLUMN}).to_csv(own_csv, index=False)
    print(f"{assay.name} seed {seed}: {len(fine)} fine-tune, {len(evaluation)} evaluation")
    true = evaluation["assay"].to_numpy()
    shipped_eval = predictions(assay.model, target, evaluation["smiles"].tolist())
    shipped_fine = predictions(assay.model, target, fine["smiles"].tolist())
    b, a = np.polyfit(shipped_fine, fine["assay"].to_numpy(), 1)
    result: dict = {
        "assay": assay.name,
        "model": assay.model,
        "seed": seed,
        "n_finetune": len(fine),
        "n_eval": len(evaluation),
        "linear_fit": {"a": float(a), "b": float(b)},
        "methods": {
            "shipped": score(shipped_eval, true),
            "shipped-linear": score(a + b * shipped_eval, true),
        },
        "seconds": {},
    }
    base = ["--seed", str(seed), *COMMON]
    runs = {  # method -> (command, the column it predicts)
        "finetune-keep-head": (
            ["finetune", "--from", assay.model, "--keep-head", "--data", str(same_csv)]
            + ["--target-columns", target, *base],
            target,
        ),
        "finetune": (
            ["finetune", "--from", assay.model, "--data", str(own_csv)]
            + ["--target-columns", ASSAY_COLUMN, *base],
            ASSAY_COLUMN,
        ),
        "scratch": (
            ["train", "--init", "none", "--data", str(same_csv), "--target-columns", target, *base],
            target,
        ),
    }
    for method, (args, column) in runs.items():
        out = work / method
        seconds = train_once(args, out, work / f"{method}.log")
        if seconds is not None:
            result["seconds"][method] = round(seconds, 1)
        pred = predictions(out, column, evaluation["smiles"].tolist())
        result["methods"][method] = score(pred, true)
    for m in METHODS:
        print(f"  {m}: RMSE {result['methods'][m]['rmse']:.4f}")
    return result


def summarise(results: list[dict], names: list[str]) -> dict:
    summary = {}
    for name in names:
        rows = [r for r in results if r["assay"] == name]
        s = {
            m: {
                "rmse_mean": float(np.mean([r["methods"][m]["rmse"] for r in rows])),
                "rmse_std": float(np.std([r["methods"][m]["rmse"] for r in rows])),
            }
            for m in METHODS
        }
        s["better_than_shipped_every_seed"] = {
            m: all(r["methods"][m]["rmse"] < r["methods"]["shipped"]["rmse"] for r in rows)
            for m in TRAINED
        }
        s["better_than_shipped_linear_every_seed"] = {
            m: all(r["methods"][m]["rmse"] < r["methods"]["shipped-linear"]["rmse"] for r in rows)
            for m in TRAINED
        }
        summary[name] = s
    return summary


def markdown(results: list[dict], info: dict) -> str:
    """The results page's table: RMSE mean ± std over seeds per method, and per seed shipped ->
    kept-head fine-tune."""
    head = "| assay (model) | fine-tune / evaluation molecules | " + " | ".join(METHODS) + " |"
    lines = [head, "|" + "---|" * (len(METHODS) + 2)]
    for name in dict.fromkeys(r["assay"] for r in results):
        rows = [r for r in results if r["assay"] == name]
        sizes = sorted({(r["n_finetune"], r["n_eval"]) for r in rows})
        cells = []
        for m in METHODS:
            v = np.array([r["methods"][m]["rmse"] for r in rows])
            cells.append(f"{v.mean():.3f} ± {v.std():.3f}")
        n = ", ".join(f"{a} / {b}" for a, b in sizes)
        lines.append(f"| {name} ({rows[0]['model']}) | {n} | " + " | ".join(cells) + " |")
    lines.append("")
    for r in results:
        m = r["methods"]
        lines.append(
            f"- {r['assay']} seed {r['seed']}: shipped {m['shipped']['rmse']:.3f}, "
            f"shipped-linear {m['shipped-linear']['rmse']:.3f} -> kept-head fine-tune "
            f"{m['finetune-keep-head']['rmse']:.3f}, fresh head {m['finetune']['rmse']:.3f}, "
            f"scratch {m['scratch']['rmse']:.3f}"
        )
    return "\n".join(lines) + "\n"


def plot(results: list[dict], names: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        rows = [r for r in results if r["assay"] == name]
        method_bars(ax, rows, METHODS, ["0.6", "0.8", "tab:blue", "tab:cyan", "tab:orange"])
        ax.set_title(f"{rows[0]['model']} -> {name} ({len(rows)} seeds)", fontsize=9)
    fig.suptitle("Fine-tuning a shipped model on a shifted assay: before (grey) / after")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assays", nargs="+", default=list(ASSAYS), choices=list(ASSAYS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--work", type=Path, default=WORK / "finetune_shift")
    p.add_argument("--json", type=Path, default=RESULTS / "finetune_shift.json")
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "results" / "finetune_shift.png")
    a = p.parse_args(argv)
    results, info = [], {}
    for name in a.assays:
        table, info[name] = ASSAYS[name].load()
        table, refused = predictable(table, ASSAYS[name].model)
        info[name].update(refused)
        print(f"{name}: {len(table)} molecules; {info[name]}")
        for seed in a.seeds:
            results.append(run_one(ASSAYS[name], table, seed, a.work / name / f"seed{seed}"))
            summary = summarise(results, [n for n in a.assays if n in info])
            out = {"assays": info, "runs": results, "summary": summary}
            a.json.write_text(json.dumps(out, indent=2) + "\n")  # after every run
    plot(results, a.assays, a.plot)
    print(json.dumps(summary, indent=2))
    print(markdown(results, info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
