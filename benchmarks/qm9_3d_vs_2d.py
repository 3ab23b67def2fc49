"""ESA-3D (bond tokens + distances, issue 20) vs ESA-2D on QM9 HOMO / LUMO / gap.

``prepare OUT --n-train N``: the first molecules of the shuffled QM9 parts (../shared/data, else
data/qm9 for part 1) -- N training molecules plus N/8 validation and N/8 test ones (80/10/10) --
written as ``qm9_N.csv`` (SMILES, for 2D) and ``qm9_N.extxyz`` (B3LYP geometries, for 3D), HOMO /
LUMO / gap in eV and the same ``split`` column in both, so both models see the same molecules.

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
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.out, args.n_train, args.seed)
    else:
        print(json.dumps(collect(args.out, args.json), indent=2))


if __name__ == "__main__":
    main()
