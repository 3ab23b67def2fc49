"""One scaffold split per (dataset, seed), written once as indices and used by every model.

For each dataset the rows that both RDKit (chemprop's parser) and molprop's 2D featuriser
accept are written to ``<work>/data/<name>.csv`` (columns ``smiles``, ``target``, ``split_seed<k>``);
row i of that file is index i in every split. Per seed we write
``benchmarks/splits/<name>_seed<k>.json`` = ``[{"train": [...], "val": [...], "test": [...]}]``,
the format of ``chemprop train --splits-file``; molprop reads the same split through
``--split-type column``; the PyG baselines read the column too.

Usage: ``python -m benchmarks.splits --datasets ESOL FreeSolv --seeds 0 1 2``
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pandas as pd
from rdkit import Chem, RDLogger

from benchmarks.common import BENCH, DATASETS, WORK, DatasetSpec
from molprop.data.splits import scaffold_split
from molprop.featurize.graph2d import Graph2DFeaturizer

log = logging.getLogger(__name__)
SPLIT_DIR = BENCH / "splits"
SIZES = (0.8, 0.1, 0.1)


def clean_table(spec: DatasetSpec) -> pd.DataFrame:
    """Rows with a SMILES both RDKit and molprop accept and a finite target; columns smiles, target."""
    RDLogger.DisableLog("rdApp.*")
    raw = pd.read_csv(spec.path)
    featurizer = Graph2DFeaturizer()
    keep = []
    for i, (smi, y) in enumerate(
        zip(raw[spec.smiles_column], raw[spec.target_column], strict=True)
    ):
        if not isinstance(smi, str) or pd.isna(y) or Chem.MolFromSmiles(smi) is None:
            continue
        try:
            graph = featurizer.from_smiles(smi)
        except Exception:  # noqa: BLE001 - any row molprop rejects is left out for every model
            continue
        if graph.n_nodes > 0:
            keep.append(i)
    frame = pd.DataFrame(
        {
            "smiles": raw[spec.smiles_column].iloc[keep].to_numpy(),
            "target": raw[spec.target_column].iloc[keep].to_numpy(),
        }
    )
    if spec.task_type == "classification":
        frame["target"] = frame["target"].astype(int)
    log.info("%s: %d of %d rows kept", spec.name, len(frame), len(raw))
    return frame


def split_path(name: str, seed: int) -> Path:
    return SPLIT_DIR / f"{name}_seed{seed}.json"


def data_path(name: str) -> Path:
    return WORK / "data" / f"{name}.csv"


def seed_csv_path(name: str, seed: int) -> Path:
    """The cleaned table plus a ``split`` column (train/val/test) for one seed."""
    return WORK / "data" / f"{name}_seed{seed}.csv"


def molprop_table_args(name: str, seed: int) -> list[str]:
    """``molprop train`` / ``hpopt`` flags that read one seed's table and its split column."""
    return [
        "--data",
        str(seed_csv_path(name, seed)),
        "--smiles-column",
        "smiles",
        "--target-columns",
        "target",
        "--task-type",
        DATASETS[name].task_type,
        "--split-type",
        "column",
        "--split-column",
        "split",
    ]


def prepare(name: str, seeds: list[int]) -> dict[int, dict[str, list[int]]]:
    """Write the cleaned table, the per-seed split JSON and per-seed CSV; return the splits."""
    spec = DATASETS[name]
    frame = clean_table(spec)
    data_path(name).parent.mkdir(parents=True, exist_ok=True)
    SPLIT_DIR.mkdir(parents=True, exist_ok=True)
    frame.to_csv(data_path(name), index=False)
    out = {}
    for seed in seeds:
        path = split_path(name, seed)
        if path.exists():
            parts = json.loads(path.read_text())[0]
        else:
            split = scaffold_split(frame["smiles"].tolist(), SIZES, seed)
            parts = {k: sorted(int(i) for i in getattr(split, k)) for k in ("train", "val", "test")}
            path.write_text(json.dumps([parts]))
        labels = pd.Series([""] * len(frame), dtype=object)
        for part, idx in parts.items():
            labels.iloc[idx] = part
        if (labels == "").any() or sum(len(v) for v in parts.values()) != len(frame):
            raise RuntimeError(f"split {path} does not cover the {len(frame)} rows of {name}")
        frame.assign(split=labels.to_numpy()).to_csv(seed_csv_path(name, seed), index=False)
        out[seed] = parts
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in args.datasets:
        parts = prepare(name, args.seeds)
        for seed, s in parts.items():
            log.info(
                "%s seed %d: train %d val %d test %d",
                name,
                seed,
                len(s["train"]),
                len(s["val"]),
                len(s["test"]),
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
