"""Recipes for the models shipped in ``pretrained/`` (``make pretrained``).

Each recipe trains an ensemble of ESA members on a dataset from the repository's ``data/``
folder with a scaffold split, then adds the applicability-domain file, calibrates the
intervals (regression) or probabilities (classification) on the validation split of its
``split.csv`` (``Recipe.calibration="validation"``, every shipped model; ``"cv"`` would fit them
on out-of-fold predictions of the train + validation rows instead: 5-fold scaffold
cross-validation, five more ensembles trained with the recipe, ``--stage calibrate-cv``; measured
in docs/results/calibration.md, not shipped) and scores them on the test split, and writes
``card.md`` from ``metrics.json``.
The configuration is deliberately small (CPU-only, a few minutes per
model) so that the artifacts stay under 10 MB and the whole run is reproducible on a laptop::

    python -m molprop.pretrained_recipes                  # all models
    python -m molprop.pretrained_recipes solubility       # one model
    python -m molprop.pretrained_recipes --stage finish   # (re)write domain, calibration, card
    python -m molprop.pretrained_recipes --stage calibrate  # (re)calibrate + card, no retraining
    python -m molprop.pretrained_recipes --stage calibrate-cv solubility  # CV calibration + card
    python -m molprop.pretrained_recipes --stage card     # (re)write card.md only
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from molprop.models.config import TrainConfig

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "moleculenet"
PRETRAINED = REPO / "pretrained"

#: architecture shared by every shipped model (small: CPU inference, < 10 MB per ensemble).
#: Dropout 0.1, no weight averaging (``ema_epochs=0`` below) and weight decay on every parameter
#: (``weight_decay_on="all"``) are pinned: the shipped models were trained so, before the CLI
#: defaults became dropout 0, ``--ema-epochs 1`` and ``--weight-decay-on matrices``.
MODEL = {
    "hidden_dim": 64,
    "heads": 4,
    "layers": "MSMSP S",
    "num_seeds": 8,
    "head_hidden": 128,
    "dropout": 0.1,
}


@dataclass(frozen=True)
class Recipe:
    """One shipped model: data, target, unit, task and training budget."""

    name: str
    data: str
    smiles_column: str
    target: str
    unit: str
    task_type: str
    epochs: int
    description: str
    source: str
    licence: str
    intended_use: str
    chemprop_reference: str = ""
    #: what the shipped calibration is fitted on: ``"cv"`` out-of-fold predictions of
    #: train + validation (5-fold scaffold cross-validation, ``--stage calibrate-cv``), or
    #: ``"validation"`` the validation split (``--stage calibrate``)
    calibration: str = "validation"


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "solubility",
            "delaney_chemprop.csv.gz",
            "smiles",
            "logp",
            "log10(mol/L)",
            "regression",
            60,
            "aqueous solubility (ESOL)",
            "ESOL (Delaney 2004), MoleculeNet / chemprop `data/delaney.csv`, 1,128 molecules",
            "MIT (chemprop repository); data from Delaney 2004, J. Chem. Inf. Comput. Sci. SI",
            "ranking small neutral organic molecules by aqueous solubility at 25 °C",
            "chemprop D-MPNN on a scaffold split of ESOL: RMSE 0.83 ± 0.05 log units",
        ),
        Recipe(
            "lipophilicity",
            "lipo_chemprop.csv.gz",
            "smiles",
            "lipo",
            "logD (pH 7.4)",
            "regression",
            40,
            "octanol/water distribution coefficient at pH 7.4",
            "Lipophilicity (ChEMBL, AstraZeneca deposition), MoleculeNet / chemprop "
            "`data/lipo.csv`, 4,200 molecules",
            "MIT (chemprop repository); ChEMBL data CC BY-SA 3.0",
            "estimating logD 7.4 of drug-like molecules",
        ),
        Recipe(
            "hydration_free_energy",
            "freesolv_chemprop.csv.gz",
            "smiles",
            "freesolv",
            "kcal/mol",
            "regression",
            50,
            "hydration free energy (FreeSolv)",
            "FreeSolv v0.5 (Mobley & Guthrie 2014), MoleculeNet / chemprop `data/freesolv.csv`, "
            "642 molecules",
            "MIT (chemprop repository); FreeSolv data as published by Mobley & Guthrie",
            "estimating hydration free energies of small neutral molecules",
        ),
        Recipe(
            "bbb_penetration",
            "bbbp.csv.gz",
            "smiles",
            "p_np",
            "probability",
            "classification",
            40,
            "blood-brain barrier penetration (BBBP)",
            "BBBP (Martins et al. 2012), MoleculeNet / chemprop `data/bbbp.csv`, 2,039 molecules",
            "MIT (chemprop repository)",
            "flagging whether a molecule is likely to penetrate the blood-brain barrier "
            "(output: probability of the positive class, p_np = 1)",
        ),
        Recipe(
            "homo_lumo_gap",
            "../qm9/qm9_3d_shuffled_part01of18.extxyz.gz",
            "smiles",
            "gap_ev",
            "eV",
            "regression",
            40,
            "HOMO-LUMO gap (QM9, B3LYP/6-31G(2df,p))",
            "QM9 (Ramakrishnan et al. 2014) via PyPI `qm9pack` 1.0.3: a random 7,269-molecule part "
            "(`data/qm9/qm9_3d_shuffled_part01of18.extxyz.gz`); gap = HOMO_LUMO_gap_au x 27.211386",
            "MIT (qm9pack); QM9 data CC0",
            "screening small organic molecules (C, H, O, N, F; up to 9 heavy atoms) by DFT "
            "frontier-orbital gap; input is SMILES (2D graph: on this data size the 2D model beat "
            "the 3D one, see docs/results/3d.md)",
        ),
    )
}


def train_config(recipe: Recipe) -> TrainConfig:
    """Short budgets (15 epochs or fewer) use a larger learning rate."""
    lr = 1e-3 if recipe.epochs <= 15 else 5e-4
    return TrainConfig(
        epochs=recipe.epochs,
        batch_size=64,
        lr=lr,
        patience=12,
        lr_patience=5,
        seed=0,
        ensemble_size=3,
        ema_epochs=0.0,
        weight_decay_on="all",  # shipped models: AdamW decayed every parameter (before issue 16)
    )


HARTREE_EV = 27.211386


def load_data(recipe: Recipe) -> str | pd.DataFrame:
    """A CSV path, or (for the QM9 extxyz part) a DataFrame of ``smiles`` and ``gap_ev``."""
    path = DATA / recipe.data
    if not path.name.endswith((".extxyz", ".extxyz.gz")):
        return str(path)
    from molprop.chem.structures import read_structures

    rows = []
    for i, record in enumerate(read_structures(path)):
        if isinstance(record, Exception):
            raise RuntimeError(f"{path} frame {i} unreadable: {record}")
        rows.append((record.info["smiles"], float(record.info["HOMO_LUMO_gap_au"]) * HARTREE_EV))
    return pd.DataFrame(rows, columns=["smiles", "gap_ev"]).astype(str)


def train(recipe: Recipe, out: Path) -> None:
    """Train the ensemble of ``recipe`` into ``out`` (replaced if it exists)."""
    from molprop.training.train import TrainRequest, run_train

    if out.exists():
        shutil.rmtree(out)
    request = TrainRequest(
        data=load_data(recipe),
        smiles_column=recipe.smiles_column,
        target_columns=[recipe.target],
        out=out,
        task_type=recipe.task_type,
        split_type="scaffold",
        model=dict(MODEL),
        train=train_config(recipe),
        units=[recipe.unit],
        name=recipe.name,
        progress=False,
    )
    run_train(request)
    shutil.rmtree(out / "logs", ignore_errors=True)  # training curves are not shipped


def card_root(out: Path) -> Path:
    """The checkout the card's paths are shown relative to: the one whose ``data/`` the model
    in ``out`` was trained on (its recorded data path ends in ``data/...``), else this one, so
    that a card rewritten in another checkout still reads ``data/moleculenet/...``."""
    from molprop.artifact.store import load_config

    data = Path(load_config(out).provenance.data or ".")
    parts = data.parts
    if data.is_absolute() and "data" in parts:
        return Path(*parts[: len(parts) - 1 - parts[::-1].index("data")])
    return REPO


def write_recipe_card(recipe: Recipe, out: Path) -> Path:
    """Write ``card.md`` of the model in ``out`` from its artifact and the recipe's texts."""
    from molprop.artifact.card import write_card

    return write_card(
        out,
        title=recipe.description,
        data_source=recipe.source,
        licence=recipe.licence,
        intended_use=recipe.intended_use,
        reference=recipe.chemprop_reference,
        reproduce="make pretrained",
        notes=["Small CPU-friendly configuration; larger models trained longer are more accurate."],
        root=card_root(out),
    )


def split_sets(recipe: Recipe, out: Path, parts: Sequence[str] = ("val", "test")):
    """One :class:`~molprop.training.calibrate.LabelledSet` per entry of ``parts`` (default:
    validation, test) of the model in ``out``: the rows its ``split.csv`` puts there (an entry
    ``"train+val"`` joins parts), read from the recipe's data with the model's featuriser and
    the training table loader (the SMILES are checked against ``split.csv``)."""
    import numpy as np

    from molprop.artifact.store import load_config
    from molprop.io.table import read_table
    from molprop.training.calibrate import table_set
    from molprop.training.train import TableSpec, load_table

    config = load_config(out)
    data = load_data(recipe)
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    split = pd.read_csv(out / "split.csv", dtype={"smiles": str, "split": str})
    wanted = [set(p.split("+")) for p in parts]
    split = split[split["split"].isin(set().union(*wanted))].reset_index(drop=True)
    rows = split["row"].to_numpy()
    spec = TableSpec(
        frame.iloc[rows].reset_index(drop=True),
        recipe.smiles_column,
        [recipe.target],
        config.featurizer,
        progress=False,
    )
    table = load_table(spec)
    if len(table) != len(split) or table.smiles != split["smiles"].tolist():
        raise RuntimeError(f"{out}/split.csv does not match {recipe.data}")
    labels = split["split"].to_numpy()
    return tuple(table_set(table, np.flatnonzero(np.isin(labels, list(w)))) for w in wanted)


def calibrate(recipe: Recipe, out: Path) -> None:
    """Calibrate the model in ``out`` on its validation split, score it on its test split and
    add the ``calibration`` entry to ``metrics.json`` (weights and other metrics unchanged)."""
    from molprop.artifact.store import read_metrics, write_metrics
    from molprop.training.calibrate import calibrate_artifact

    val, test = split_sets(recipe, out)
    report = calibrate_artifact(out, val, test)
    metrics = read_metrics(out)
    metrics["calibration"] = report
    write_metrics(out, metrics)


def calibrate_cv(
    recipe: Recipe, out: Path, work: Path | None = None, threads: int | None = 1
) -> None:
    """Calibrate the model in ``out`` on out-of-fold predictions of its train + validation
    rows (5-fold scaffold cross-validation, each fold an ensemble trained with the recipe; fold
    models in ``work`` or a temporary directory; ``threads`` torch threads), score it on its
    test split and add the ``calibration`` entry to ``metrics.json`` (weights unchanged)."""
    from molprop.artifact.store import load_config, read_metrics, write_metrics
    from molprop.training.cv_calibrate import CrossValidation, calibrate_artifact_cv

    stored = load_config(out).train
    if stored != train_config(recipe):
        raise RuntimeError(
            f"{out}/config.json was trained with {stored}, not the recipe's "
            f"{train_config(recipe)}: retrain it (--stage train) before calibrate-cv"
        )
    trainval, test = split_sets(recipe, out, ("train+val", "test"))
    cv = CrossValidation(work_dir=work, threads=threads)
    report = calibrate_artifact_cv(out, trainval, test, cv, what="train+val")
    metrics = read_metrics(out)
    metrics["calibration"] = report
    write_metrics(out, metrics)


def finish(recipe: Recipe, out: Path, work: Path | None = None, threads: int | None = 1) -> None:
    """Add the applicability domain, calibrate (as the recipe says) and write the card (no
    retraining of the shipped weights)."""
    from molprop.artifact.domain import add_domain_to_artifact

    add_domain_to_artifact(out)
    if recipe.calibration == "cv":
        calibrate_cv(recipe, out, work, threads)
    else:
        calibrate(recipe, out)
    write_recipe_card(recipe, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(RECIPES), help="models to build")
    parser.add_argument(
        "--stage",
        choices=["all", "train", "finish", "calibrate", "calibrate-cv", "card"],
        default="all",
        help="finish: domain + calibration (as the recipe says) + card; calibrate: "
        "calibration on the validation split + card; calibrate-cv: calibration on "
        "out-of-fold predictions of train+val (5-fold scaffold CV) + card; card: card.md only",
    )
    parser.add_argument("--out", default=str(PRETRAINED), help="directory of the models")
    parser.add_argument(
        "--work",
        default=None,
        help="keep the cross-validation fold models here (default: a temporary directory)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads of the fold trainings (default 1)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    unknown = sorted(set(args.names) - set(RECIPES))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {sorted(RECIPES)}")
    for name in args.names:
        recipe, out = RECIPES[name], Path(args.out) / name
        if args.stage in ("all", "train"):
            log.info("training %s -> %s", name, out)
            train(recipe, out)
        work = Path(args.work) / name if args.work else None
        if args.stage in ("all", "finish"):
            finish(recipe, out, work, args.threads)
        if args.stage == "calibrate":
            calibrate(recipe, out)
        if args.stage == "calibrate-cv":
            calibrate_cv(recipe, out, work, args.threads)
        if args.stage in ("calibrate", "calibrate-cv", "card"):
            write_recipe_card(recipe, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
