"""Mean-per-element baseline for OC20 total energies (docs/results/3d.md).

E(system) ~= sum over elements of n_element * e_element, with e fitted by least squares on the
training frames' compositions; same by-system split as the NSA model (``split`` info key written
by benchmarks/prepare_3d.py). With ``--model`` the artifact's test-frame predictions are
scored the same way (total, per atom, per test system).

Usage: python benchmarks/oc20_element_baseline.py SPLIT_EXTXYZ [--model ARTIFACT_DIR]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from molprop.chem.structures import read_structures

TARGET = "energy_dft_total_eV"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    records = read_structures(args.data)
    elements = sorted({int(z) for r in records for z in r.numbers})
    comp = np.array([[np.sum(r.numbers == z) for z in elements] for r in records], dtype=float)
    y = np.array([float(r.info[TARGET]) for r in records])
    split = np.array([r.info["split"] for r in records])
    train, test = split == "train", split == "test"
    coef, *_ = np.linalg.lstsq(comp[train], y[train], rcond=None)
    pred = comp @ coef
    n_atoms = comp.sum(1)
    per_atom_mean = np.mean(y[train] / n_atoms[train]) * n_atoms
    result = {
        "n_frames": {"train": int(train.sum()), "test": int(test.sum())},
        "n_systems": {
            p: len({r.info["sid"] for r, s in zip(records, split, strict=True) if s == p})
            for p in ("train", "val", "test")
        },
        "test_mae_eV": {
            "mean_per_element_lstsq": float(np.mean(np.abs(pred[test] - y[test]))),
            "train_mean_per_atom_times_n": float(np.mean(np.abs(per_atom_mean[test] - y[test]))),
        },
        "unseen_elements_in_test": [
            z
            for j, z in enumerate(elements)
            if comp[train, j].sum() == 0 and comp[test, j].sum() > 0
        ],
    }
    predictions = {"mean_per_element_lstsq": pred[test]}
    if args.model:
        from molprop.inference import Predictor

        test_records = [r for r, s in zip(records, split, strict=True) if s == "test"]
        out = Predictor.from_pretrained(args.model).predict_structures(test_records)
        predictions["model"] = out[TARGET].to_numpy()
        result["test_mae_eV"]["model"] = float(np.mean(np.abs(predictions["model"] - y[test])))
    sids = np.array([r.info["sid"] for r in records])[test]
    result["test_mae_per_atom_eV"] = {
        name: float(np.mean(np.abs(p - y[test]) / n_atoms[test])) for name, p in predictions.items()
    }
    result["test_mae_by_system_eV"] = {
        sid: {
            "n_frames": int((sids == sid).sum()),
            "n_atoms": int(n_atoms[test][sids == sid][0]),
            **{
                name: float(np.mean(np.abs(p - y[test])[sids == sid]))
                for name, p in predictions.items()
            },
        }
        for sid in sorted(set(sids))
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
