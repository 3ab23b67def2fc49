"""Prepare the small 3D benchmark inputs of docs/results/3d.md (writes to an output folder).

* QM9 part 1 (data/qm9): the first N molecules (the file is already shuffled), HOMO / LUMO /
  gap converted from Hartree to eV, one random 80/10/10 split stored as a ``split`` column /
  info key, so ESA-2D (CSV of SMILES) and ESA-3D (extxyz) use exactly the same molecules.
* OC20 (data/oc20/oc20_relax_frames_every5.extxyz.gz): every frame gets a ``split`` info key
  assigned per *system* (sid), so no relaxation has frames on both sides; 3 val and 3 test
  systems, chosen at random among those whose elements all occur in training systems.

Usage: python benchmarks/prepare_3d.py OUT_DIR [--qm9-n 3000] [--seed 0]
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import ase.io
import numpy as np
import pandas as pd

from molprop.chem.structures import read_ase_frames

HARTREE_EV = 27.211386245988
DATA = Path(__file__).resolve().parents[1] / "data"


def split_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    labels = np.array(["train"] * n, dtype=object)
    order = rng.permutation(n)
    n_val, n_test = round(0.1 * n), round(0.1 * n)
    labels[order[:n_val]] = "val"
    labels[order[n_val : n_val + n_test]] = "test"
    return labels


def system_split(frames: list, rng: np.random.Generator, n_val: int = 3, n_test: int = 3) -> dict:
    """sid -> train/val/test. Systems are held out in random order, but only when each of
    their elements still occurs in a training system (no element is unseen at test time)."""
    elements: dict[str, set[int]] = {}
    for atoms in frames:
        elements.setdefault(atoms.info["sid"], set()).update(atoms.numbers.tolist())
    sids = sorted(elements)
    held: list[str] = []
    for sid in rng.permutation(sids):
        if len(held) == n_val + n_test:
            break
        rest = set().union(*(elements[s] for s in sids if s not in held and s != sid))
        if elements[sid] <= rest:
            held.append(str(sid))
    labels = {sid: "train" for sid in sids}
    labels.update({sid: "val" for sid in held[:n_val]})
    labels.update({sid: "test" for sid in held[n_val:]})
    return labels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--qm9-n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    qm9 = DATA / "qm9" / "qm9_3d_shuffled_part01of18.extxyz.gz"
    frames = read_ase_frames(qm9, qm9.name.removesuffix(".gz"))[: args.qm9_n]
    labels = split_labels(len(frames), rng)
    rows = []
    for atoms, label in zip(frames, labels, strict=True):
        info = atoms.info
        values = {
            "homo_ev": info["HOMO_au"] * HARTREE_EV,
            "lumo_ev": info["LUMO_au"] * HARTREE_EV,
            "gap_ev": info["HOMO_LUMO_gap_au"] * HARTREE_EV,
        }
        atoms.info = {"smiles": info["smiles"], "index": info["index"], **values, "split": label}
        rows.append(atoms.info)
    pd.DataFrame(rows).to_csv(out / "qm9_subset.csv", index=False)
    ase.io.write(out / "qm9_subset.extxyz", frames, format="extxyz")

    oc20 = DATA / "oc20" / "oc20_relax_frames_every5.extxyz.gz"
    frames = read_ase_frames(oc20, oc20.name.removesuffix(".gz"))
    by_sid = system_split(frames, rng)
    for atoms in frames:
        atoms.info["split"] = by_sid[atoms.info["sid"]]
    buffer = io.StringIO()
    ase.io.write(buffer, frames, format="extxyz")
    (out / "oc20_split.extxyz").write_text(buffer.getvalue())
    counts = pd.Series(list(by_sid.values())).value_counts().to_dict()
    print(
        f"QM9: {len(rows)} molecules; OC20: {len(frames)} frames of {len(by_sid)} systems {counts}"
    )


if __name__ == "__main__":
    main()
