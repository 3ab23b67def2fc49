"""ESA-3D (bond tokens + distances) vs ESA-2D on QM9 HOMO / LUMO / gap.

``prepare OUT --n-train N``: the first molecules of the shuffled QM9 parts (../shared/data, else
data/qm9 for part 1) -- N training molecules plus N/8 validation and N/8 test ones (80/10/10) --
written as ``qm9_N.csv`` (SMILES, for 2D) and ``qm9_N.extxyz`` (B3LYP geometries, for 3D), HOMO /
LUMO / gap in eV and the same ``split`` column in both, so both models see the same molecules.

``conformers OUT --json RESULT.json``: every finished run's test MAE on SMILES input (3D: seeded
ETKDGv3/MMFF conformers) and, for 3D runs, on the DFT geometries.

``collect OUT --json RESULT.json``: reads each run's ``metrics.json`` (test MAE per target) and
training log (seconds per epoch) under ``OUT/runs`` and writes one JSON summary.

The runs themselves are ``molprop train`` commands (docs/results/3d.md lists them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import ase.io
import numpy as np
import pandas as pd

from benchmarks.prepare_3d import HARTREE_EV
from molprop.chem.structures import read_ase_frames

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "qm9" / "qm9pack_full"
TARGETS = ("homo_ev", "lumo_ev", "gap_ev")


def qm9_parts() -> list[Path]:
    parts = sorted(SHARED.glob("qm9_3d_shuffled_part*of18.extxyz.gz"))
    return parts or [ROOT / "data" / "qm9" / "qm9_3d_shuffled_part01of18.extxyz.gz"]


def prepare(out: Path, n_train: int, seed: int = 0) -> None:
    n = n_train + 2 * (n_train // 8)
    frames: list = []
    for part in qm9_parts():
        frames += read_ase_frames(part, part.name.removesuffix(".gz"))
        if len(frames) >= n:
            break
    if len(frames) < n:
        raise SystemExit(f"only {len(frames)} QM9 molecules found, {n} needed")
    frames = frames[:n]
    order = np.random.default_rng(seed).permutation(n)
    labels = np.array(["train"] * n, dtype=object)
    labels[order[: n_train // 8]] = "val"
    labels[order[n_train // 8 : 2 * (n_train // 8)]] = "test"
    rows = []
    for atoms, label in zip(frames, labels, strict=True):
        info = atoms.info
        atoms.info = {
            "smiles": info["smiles"],
            "index": info["index"],
            "homo_ev": info["HOMO_au"] * HARTREE_EV,
            "lumo_ev": info["LUMO_au"] * HARTREE_EV,
            "gap_ev": info["HOMO_LUMO_gap_au"] * HARTREE_EV,
            "split": label,
        }
        rows.append(atoms.info)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / f"qm9_{n_train}.csv", index=False)
    ase.io.write(out / f"qm9_{n_train}.extxyz", frames, format="extxyz")
    counts = pd.Series(labels).value_counts().to_dict()
    print(f"wrote {out}/qm9_{n_train}.csv/.extxyz: {counts}")


def collect(out: Path, json_path: Path) -> dict:
    """Per run: test MAE (eV) per target, epochs run, fit seconds and seconds per epoch."""
    runs = {}
    for metrics in sorted((out / "runs").glob("*/metrics.json")):
        data = json.loads(metrics.read_text())
        test = data["test"]["ensemble"]
        member = data["training"]["members"][0]
        epochs = max(int(member["epochs_run"]), 1)
        runs[metrics.parent.name] = {
            "test_mae_ev": {t: test[f"mae/{t}"] for t in TARGETS},
            "n_test": int(test["n"]) // len(TARGETS),
            "epochs_run": epochs,
            "best_epoch": member["best_epoch"],
            "fit_seconds": member["seconds"],
            "seconds_per_epoch": round(member["seconds"] / epochs, 2),
            "invalid_rows": data["training"]["n_rows_invalid"],
        }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(runs, indent=2) + "\n")
    return runs


def run_group(name: str) -> tuple[int, str]:
    """``(n_train, epochs tag)`` of a run named ``<kind>_n<N>[_e<E>]_s<seed>`` (tag ``""``
    without ``_e<E>``): the runs whose seeds are pooled."""
    parts = name.split("_")
    n = int(next(p for p in parts if p.startswith("n"))[1:])
    return n, next((p for p in parts[2:] if p.startswith("e")), "")


def group_label(n: int, tag: str) -> str:
    return f"{n}" + (f", {tag[1:]} epochs" if tag else "")


def summary_table(runs: dict) -> str:
    """Markdown rows: per (model, n_train, epochs tag), mean ± std over seeds of the test MAE per
    target, and the mean seconds per epoch."""
    groups: dict[tuple[int, str, str], list[dict]] = {}
    for name, run in runs.items():
        groups.setdefault((*run_group(name), name.split("_")[0]), []).append(run)
    lines = [
        "| train molecules | model | seeds | HOMO | LUMO | gap | s / epoch |",
        "|---|---|---|---|---|---|---|",
    ]
    for (n, tag, kind), rs in sorted(groups.items()):
        cells = []
        for t in TARGETS:
            v = np.array([r["test_mae_ev"][t] for r in rs])
            cells.append(f"{v.mean():.3f} ± {v.std(ddof=1):.3f}" if len(v) > 1 else f"{v[0]:.3f}")
        sec = np.mean([r["seconds_per_epoch"] for r in rs])
        label = group_label(n, tag)
        lines.append(
            f"| {label} | ESA-{kind.upper()} | {len(rs)} | {' | '.join(cells)} | {sec:.1f} |"
        )
    return "\n".join(lines)


def plot(runs: dict, path: Path) -> None:
    """Test MAE per target, 2D vs 3D, one dot per seed (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({run_group(name) for name in runs})
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 3.6), squeeze=False)
    for ax, group in zip(axes[0], groups):
        for k, (kind, colour) in enumerate((("2d", "tab:blue"), ("3d", "tab:orange"))):
            rs = [
                r
                for name, r in runs.items()
                if name.startswith(f"{kind}_") and run_group(name) == group
            ]
            for t, target in enumerate(TARGETS):
                v = [r["test_mae_ev"][target] for r in rs]
                x = t + (k - 0.5) * 0.3
                ax.scatter(
                    [x] * len(v),
                    v,
                    color=colour,
                    s=18,
                    label=f"ESA-{kind.upper()}" if t == 0 else None,
                )
                if v:
                    ax.hlines(np.mean(v), x - 0.12, x + 0.12, color=colour)
        ax.set_xticks(range(len(TARGETS)), ["HOMO", "LUMO", "gap"])
        n, tag = group
        epochs = f", {tag[1:]} epochs" if tag else ""
        ax.set(ylabel="test MAE (eV)", title=f"QM9, {n} training molecules{epochs}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def conformer_scores(out: Path, json_path: Path) -> dict:
    """Each run's test MAE (eV) on SMILES input (3D: seeded RDKit ETKDGv3/MMFF conformers, what a
    SMILES user gets) and, for 3D runs, on the DFT geometries. SMILES that cannot be embedded are
    counted (``smiles_failed``); the MAEs are over the test molecules every run of the same size
    predicted (``n_common``), so 2D and 3D are compared on the same molecules."""
    from molprop import Predictor

    preds: dict[str, tuple[int, pd.DataFrame, pd.DataFrame | None]] = {}
    tests: dict[int, pd.DataFrame] = {}
    for run in sorted(p for p in (out / "runs").iterdir() if (p / "metrics.json").exists()):
        n = int(run.name.split("_n")[1].split("_")[0])
        if n not in tests:
            table = pd.read_csv(out / f"qm9_{n}.csv")
            tests[n] = table[table["split"] == "test"].reset_index(drop=True)
        model = Predictor.from_pretrained(run)
        on_smiles = model.predict(tests[n]["smiles"].tolist())
        on_geometry = None
        if run.name.startswith("3d"):
            frames = read_ase_frames(out / f"qm9_{n}.extxyz", f"qm9_{n}.extxyz")
            on_geometry = model.predict_structures([f for f in frames if f.info["split"] == "test"])
        preds[run.name] = (n, on_smiles, on_geometry)
    common = {
        n: np.logical_and.reduce(
            [p[1]["status"].eq("ok").to_numpy() for p in preds.values() if p[0] == n]
        )
        for n in tests
    }
    scores = {}
    for name, (n, on_smiles, on_geometry) in preds.items():
        ok, test = common[n], tests[n]
        entry = {
            "n_test": len(test),
            "smiles_failed": int((on_smiles["status"] != "ok").sum()),
            "n_common": int(ok.sum()),
            "smiles_input_mae_ev": {
                t: float((on_smiles[t] - test[t]).abs()[ok].mean()) for t in TARGETS
            },
        }
        if on_geometry is not None:
            entry["dft_geometry_mae_ev"] = {
                t: float((on_geometry[t] - test[t]).abs()[ok].mean()) for t in TARGETS
            }
        scores[name] = entry
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(scores, indent=2) + "\n")
    return scores


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out", type=Path)
    p.add_argument("--n-train", type=int, default=3000)
    p.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("--json", type=Path, required=True)
    c.add_argument("--plot", type=Path, default=None, help="PNG of the test MAEs")
    k = sub.add_parser("conformers")
    k.add_argument("out", type=Path)
    k.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.out, args.n_train, args.seed)
    elif args.cmd == "collect":
        runs = collect(args.out, args.json)
        if args.plot is not None:
            plot(runs, args.plot)
        print(summary_table(runs))
    else:
        print(json.dumps(conformer_scores(args.out, args.json), indent=2))


if __name__ == "__main__":
    main()
