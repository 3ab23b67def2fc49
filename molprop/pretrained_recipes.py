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
    python -m molprop.pretrained_recipes --stage calibrate-cv bbb_penetration  # CV calibration (random starts)
    python -m molprop.pretrained_recipes --stage card     # (re)write card.md only

``solubility`` is fine-tuned from the foundation model (``--init foundation``, as the ADMET
models) on the AqSolDB table of ``data/admet``, on the scaffold split that ``admet_regression``
gives those molecules (its ``split.csv``, so build the ADMET models first: ``make pretrained``
does), with the test molecules of ESOL's scaffold split kept out of train and validation, so
that it can be scored against ``admet_regression`` and against the ESOL-trained model it
replaced on molecules none of them trained on (``metrics.json["previous"]["held_out"]``).

``homo_lumo_gap_3d`` is the structure-input twin of ``homo_lumo_gap``: the same QM9
part and the same split (its ``split.csv``, so build ``homo_lumo_gap`` first), the B3LYP
geometries of the file through the 3D featuriser of ``benchmarks/qm9_3d_vs_2d.sh`` (bond tokens,
heavy atoms, element-pair Gaussians, MAE loss). Its ``finish`` stage also scores it on RDKit/MMFF
conformers of the test SMILES and the 2D model on the same SMILES (``metrics.json``
``input_comparison``, shown on the card).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from molprop.artifact import Artifact, CardTexts
from molprop.artifact.resolve import PANEL_SUFFIX, PANELS_DIR, artifacts_in
from molprop.models.config import PRESETS, TaskType, TrainConfig

if TYPE_CHECKING:
    from molprop.io.table import MoleculeTable
    from molprop.training.tables import LabelledSet

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "moleculenet"
PRETRAINED = REPO / "pretrained"

#: architecture shared by every shipped 2D model: the CLI's default preset (`small`:
#: hidden 64, 4 heads, ``MSMSP S``, 8 seeds, no dropout, directed tokens). Earlier the
#: shipped models pinned dropout 0.1, a 128-wide head, no weight averaging, weight decay on every
#: parameter and patience 12; ``make pretrained`` now trains them as ``molprop train`` would by
#: default (their earlier test metrics are kept in ``metrics.json["previous"]`` and on the card).
MODEL: dict[str, Any] = dict(PRESETS["default"]["model"])


@dataclass(frozen=True)
class Recipe:
    """One shipped model: data, target, unit, task and training budget."""

    name: str
    data: str
    smiles_column: str
    target: str
    unit: str
    task_type: TaskType
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
    #: a structure model (featuriser ``3d``): its featuriser parameters, model and train
    #: settings (over :data:`MODEL_3D` / :func:`train_config`), the model whose ``split.csv`` it
    #: reuses and the 2D model the card compares it with on SMILES; a 2D recipe with
    #: ``split_from`` takes for each of its molecules the part that model's ``split.csv`` gives
    #: the same SMILES (every molecule of the data must be listed there: :func:`split_frame`)
    featurizer: str = "2d"
    featurizer_params: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    split_from: str = ""
    #: the data file's column of the target when the shipped model names it otherwise
    #: (``target``; the column's name is kept as the model's former name, still accepted)
    column: str = ""
    #: the model this one starts from (``molprop train --init``: its architecture, featuriser,
    #: encoder and readout, a fresh head); "" a random start with :data:`MODEL`
    init: str = ""
    #: a data file under ``data/moleculenet`` (SMILES column ``smiles``) whose scaffold test part
    #: (``molprop train``'s split of it: 80/10/10, seed 0) is kept out of this model's train and
    #: validation parts (:func:`kept_out_molecules`): the test molecules of a model trained on
    #: that file, so that both can be scored on molecules neither trained on
    keep_out: str = ""
    #: the names the target had in the model this one replaced, still accepted where a target
    #: is named (for a deprecation period)
    former_names: tuple[str, ...] = ()

    @property
    def data_column(self) -> str:
        """The data's column of the target."""
        return self.column or self.target

    @property
    def structures(self) -> bool:
        """True for a model trained on the geometries of a structure file (featuriser 3d)."""
        return self.featurizer == "3d"

    @property
    def given_split(self) -> bool:
        """True for a 2D model trained on the parts :func:`split_frame` gives its molecules."""
        return bool(self.split_from) and not self.structures

    @property
    def data_path(self) -> str:
        """The data file as the repository names it (``data/...``)."""
        return (DATA / self.data).resolve().relative_to(REPO).as_posix()


#: the epochs of ``solubility``, fine-tuned from the foundation model on 7,956 AqSolDB training
#: molecules: in a 30-epoch run the first member's validation loss was lowest at epoch 7
#: (counted from 0, as ``best_epoch``) and rose from there, also after the learning rate was
#: halved at epoch 17, so 15 leave a margin; each member's best epoch is in
#: ``metrics.json["training"]``
SOLUBILITY_EPOCHS = 15

# A retrain from another start (``init``) replaces a shipped model only when its ensemble's
# validation metric (the model's ``split.csv`` validation part, ``metrics.json["val"]``) is
# better than the shipped model's: RMSE for regression, ROC-AUC for classification (the
# card's first metric; MCC at the 0.5 threshold on a validation part of ~200 molecules moves
# more); test metrics of both are reported either way (card, ``metrics.json["previous"]``).

#: the epochs of ``hydration_free_energy``, fine-tuned from the foundation model on 513 FreeSolv
#: training molecules: in a 50-epoch run (the random start's budget) the first member's
#: validation loss was lowest at epoch 19 and did not come back down, also after the learning
#: rate was halved at epochs 29 and 38, so 30 leave a margin. It replaced the random start
#: on validation RMSE 2.009 against 2.739 kcal/mol (test 1.531 against 1.962)
HYDRATION_EPOCHS = 30

# ``bbb_penetration`` stays a random start (40 epochs): fine-tuned from the foundation model
# (10 epochs: in a 40-epoch run the first member's validation loss was lowest at epoch 1 and
# rose from there, also after the learning rate was halved at epochs 11 and 20) its ensemble
# lost on validation, ROC-AUC 0.875 against the shipped model's 0.876 (MCC 0.534 against
# 0.625), so it did not replace it, though it scored better on the test part (ROC-AUC 0.915
# against 0.887, MCC 0.696 against 0.585); the MoleculeNet grid's foundation start lost on
# BBBP too (docs/results/grid_default.md: MCC 0.644 against 0.656, 5 scaffold seeds)

#: the epochs of ``lipophilicity`` fine-tuned from the foundation model (3,360 training
#: molecules): the random start's 40, since the foundation starts of the MoleculeNet grid
#: (docs/results/grid_default.md, 30 epochs, 5 scaffold seeds) had their best validation epoch
#: late (13 to 29 of 30); the members' best epochs here were 26, 23 and 29, and the first
#: member's validation loss rose after its best, also after the learning rate was halved at
#: epochs 26 and 36. It replaced the random start on validation RMSE 0.534 against 0.584 (test
#: RMSE 0.624 against 0.621, MAE 0.458 against 0.479: as good on the test part, not better)
LIPOPHILICITY_EPOCHS = 40

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "solubility",
            "../admet/solubility_aqsoldb.csv.gz",
            "smiles",
            "logS",
            "log10(mol/L)",
            "regression",
            SOLUBILITY_EPOCHS,
            "aqueous solubility (AqSolDB)",
            "AqSolDB (Sorkun et al. 2019, mcsorkun/AqSolDB `results/data_curated.csv`) as "
            "curated in `data/admet` (standardised, duplicates merged or dropped; "
            "data/admet/SOURCES.md), 9,273 molecules",
            "CC0-1.0 (AqSolDB data); curation script MIT (this repository)",
            "ranking organic molecules (drug-like and industrial) by aqueous solubility at room "
            "temperature",
            "TDC ADMET-group leaderboard rank 1 on Solubility_AqSolDB (TDC's scaffold split of "
            "the 9,982-row AqSolDB): MAE 0.725 ± 0.011 log units (ChemFM)",
            init="foundation",
            split_from="admet_regression",
            keep_out="delaney_chemprop.csv.gz",
            former_names=("logp",),
        ),
        Recipe(
            "lipophilicity",
            "lipo_chemprop.csv.gz",
            "smiles",
            "logD_7.4",
            "log10 units (logD, octanol/water at pH 7.4)",
            "regression",
            LIPOPHILICITY_EPOCHS,
            "octanol/water distribution coefficient at pH 7.4",
            "Lipophilicity (ChEMBL, AstraZeneca deposition), MoleculeNet / chemprop "
            "`data/lipo.csv`, 4,200 molecules",
            "MIT (chemprop repository); ChEMBL data CC BY-SA 3.0",
            "estimating logD 7.4 of drug-like molecules",
            column="lipo",
            init="foundation",
        ),
        Recipe(
            "hydration_free_energy",
            "freesolv_chemprop.csv.gz",
            "smiles",
            "hydration_free_energy",
            "kcal/mol",
            "regression",
            HYDRATION_EPOCHS,
            "hydration free energy (FreeSolv)",
            "FreeSolv v0.5 (Mobley & Guthrie 2014), MoleculeNet / chemprop `data/freesolv.csv`, "
            "642 molecules",
            "MIT (chemprop repository); FreeSolv data as published by Mobley & Guthrie",
            "estimating hydration free energies of small neutral molecules",
            column="freesolv",
            init="foundation",
        ),
        Recipe(
            "bbb_penetration",
            "bbbp.csv.gz",
            "smiles",
            "bbb_probability",
            "probability",
            "classification",
            40,
            "blood-brain barrier penetration (BBBP)",
            "BBBP (Martins et al. 2012), MoleculeNet / chemprop `data/bbbp.csv`, 2,039 molecules",
            "MIT (chemprop repository)",
            "flagging whether a molecule is likely to penetrate the blood-brain barrier "
            "(output: probability of the positive class, p_np = 1 in the data)",
            column="p_np",
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
            "frontier-orbital gap; input is SMILES (2D graph; from RDKit conformers of SMILES the "
            "3D model `homo_lumo_gap_3d` scores worse, from DFT geometries better: "
            "docs/results/3d.md)",
        ),
        Recipe(
            "homo_lumo_gap_3d",
            "../qm9/qm9_3d_shuffled_part01of18.extxyz.gz",
            "smiles",
            "gap_ev",
            "eV",
            "regression",
            40,
            "HOMO-LUMO gap (QM9, B3LYP/6-31G(2df,p)) from a 3D structure",
            "QM9 (Ramakrishnan et al. 2014) via PyPI `qm9pack` 1.0.3: the same 7,269-molecule part "
            "as `homo_lumo_gap`, its B3LYP geometries; gap = HOMO_LUMO_gap_au x 27.211386",
            "MIT (qm9pack); QM9 data CC0",
            "screening small organic molecules (C, H, O, N, F; up to 9 heavy atoms) by DFT "
            "frontier-orbital gap from a DFT-quality 3D structure (xyz / extxyz / SDF / ASE / "
            "pymatgen); for SMILES input see the input comparison below",
            featurizer="3d",
            featurizer_params={"include_h": False},
            model={"pair_rbf": 16},
            train={"ensemble_size": 3, "loss": "mae"},
            split_from="homo_lumo_gap",
        ),
    )
}

#: the 3D recipes' architecture: ``--preset small`` (no dropout, default head) as in
#: ``benchmarks/qm9_3d_vs_2d.sh``, the run the 3D featuriser won (docs/results/3d.md)
MODEL_3D = {"hidden_dim": 64, "heads": 4, "layers": "MSMSP S", "num_seeds": 8, "dropout": 0.0}


def train_config(recipe: Recipe) -> TrainConfig:
    """What ``molprop train`` does by default (the default preset's batch size, learning rate
    and schedule, every other setting the CLI's default: weight averaging, decay on the weight
    matrices, patience 30) with the recipe's epochs, seed 0 and 3 members; a structure recipe
    trains as ``benchmarks/qm9_3d_vs_2d.sh`` (``--preset small``) with its ``train`` settings on
    top."""
    if recipe.structures:
        values = {"epochs": recipe.epochs, "batch_size": 64, "lr": 5e-4, "seed": 0}
        return TrainConfig(**{**values, **recipe.train})
    preset = PRESETS["default"]["train"]
    return TrainConfig(**{**preset, "epochs": recipe.epochs, "seed": 0, "ensemble_size": 3})


HARTREE_EV = 27.211386


def load_data(recipe: Recipe) -> str | pd.DataFrame:
    """A CSV path, or (for the QM9 extxyz part) a DataFrame of ``smiles`` and ``gap_ev``, or
    (a recipe with a given split) the rows it trains on with their ``split``
    (:func:`split_frame`)."""
    path = DATA / recipe.data
    if recipe.given_split:
        return split_frame(recipe)
    if not path.name.endswith((".extxyz", ".extxyz.gz")):
        return str(path)
    from molprop.chem.structures import read_structures

    rows = []
    for i, record in enumerate(read_structures(path)):
        if isinstance(record, Exception):
            raise RuntimeError(f"{path} frame {i} unreadable: {record}")
        rows.append((record.info["smiles"], float(record.info["HOMO_LUMO_gap_au"]) * HARTREE_EV))
    return pd.DataFrame(rows, columns=["smiles", "gap_ev"]).astype(str)


def labelled_table(recipe: Recipe) -> pd.DataFrame:
    """The table whose rows the ``row`` column of the model's ``split.csv`` indexes, its target
    column as numbers (a 2D recipe: the data file, or the rows of its given split)."""
    data = load_data(recipe)
    if isinstance(data, pd.DataFrame):
        return data.astype({recipe.data_column: float})
    return pd.read_csv(data)


def reused_split(recipe: Recipe) -> pd.DataFrame:
    """The ``split.csv`` (row, smiles, split) of the model ``recipe.split_from``."""
    split = Artifact(PRETRAINED / recipe.split_from).read_split()
    if split is None:
        raise RuntimeError(
            f"{PRETRAINED / recipe.split_from} has no split: build {recipe.split_from} first "
            "(its split is reused)"
        )
    return split


def molecule_key(smiles: str) -> str:
    """The molecule's standard InChIKey (the SMILES itself where RDKit cannot read it): how
    molecules are matched across files and models."""
    from molprop.chem.smiles import inchikey
    from molprop.errors import InvalidInputError

    try:
        return inchikey(smiles)
    except InvalidInputError:
        return smiles


def readable(smiles: str) -> bool:
    """True when RDKit parses ``smiles`` (training rejects the rows it cannot)."""
    from molprop.chem.smiles import parse_smiles
    from molprop.errors import InvalidInputError

    try:
        parse_smiles(smiles)
    except InvalidInputError:
        return False
    return True


def kept_out_molecules(recipe: Recipe) -> set[str]:
    """The InChIKeys of the test part of ``recipe.keep_out``'s scaffold split as ``molprop
    train`` makes it (80/10/10, seed :func:`train_config`'s, over the SMILES RDKit reads):
    the test molecules of the model trained on that file. Empty without ``keep_out``."""
    if not recipe.keep_out:
        return set()
    from molprop.data.splits import make_split
    from molprop.io.table import read_table

    smiles = [s for s in read_table(DATA / recipe.keep_out)["smiles"] if readable(s)]
    split = make_split("scaffold", smiles, seed=train_config(recipe).seed)
    return {molecule_key(smiles[i]) for i in split.test}


def split_frame(recipe: Recipe) -> pd.DataFrame:
    """The rows a recipe with a given split trains on: its data's SMILES and target, and
    ``split``: the part the ``split.csv`` of ``recipe.split_from`` gives the same SMILES (every
    molecule must be listed there), without the rows of :func:`kept_out_molecules` that would
    be in train or validation (those in test stay). Rows in the data file's order."""
    from molprop.io.table import read_table

    frame = read_table(DATA / recipe.data)
    smiles = frame[recipe.smiles_column]
    listed = reused_split(recipe)
    part = dict(zip(listed["smiles"], listed["split"], strict=True))
    missing = [s for s in smiles if s not in part and readable(s)]
    if missing:
        raise RuntimeError(
            f"{len(missing)} molecules of {recipe.data} are not in "
            f"{recipe.split_from}/split.csv (e.g. {missing[0]!r})"
        )
    # a SMILES RDKit cannot read has no part (training rejected it there): left out here too
    frame["split"] = [part.get(s, "") for s in smiles]
    frame = frame[frame["split"] != ""]
    held = kept_out_molecules(recipe)
    if held:
        keys = frame[recipe.smiles_column].map(molecule_key)
        frame = frame[~(keys.isin(held) & frame["split"].ne("test"))]
    columns = [recipe.smiles_column, recipe.data_column, "split"]
    return frame[columns].reset_index(drop=True)


def structure_file(recipe: Recipe, folder: Path, splits: Sequence[str] | None = None) -> Path:
    """Write the frames of ``recipe.data`` (B3LYP geometries) as ``folder/<name>.extxyz`` with
    the info keys ``smiles``, ``recipe.target`` and ``split`` (the split of ``split_from``), in
    the file's order; ``splits``: only the frames in those parts. The SMILES of every frame
    must be the reused split's."""
    from molprop.chem.structures import read_ase_frames

    path = DATA / recipe.data
    frames = read_ase_frames(path, path.name.removesuffix(".gz"))
    split = reused_split(recipe)
    if len(split) != len(frames) or split["row"].tolist() != list(range(len(frames))):
        raise RuntimeError(f"{recipe.split_from}/split.csv does not list the {len(frames)} frames")
    keep = []
    for atoms, smiles, part in zip(frames, split["smiles"], split["split"], strict=True):
        if atoms.info["smiles"] != smiles:
            raise RuntimeError(f"{recipe.split_from}/split.csv: {smiles!r} is not the frame's")
        gap = float(atoms.info["HOMO_LUMO_gap_au"]) * HARTREE_EV
        atoms.info = {"smiles": smiles, recipe.target: gap, "split": part}
        if splits is None or part in splits:
            keep.append(atoms)
    import ase.io

    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{recipe.name}.extxyz"
    ase.io.write(out, keep, format="extxyz")
    return out


def replaced_model(out: Path) -> dict[str, Any] | None:
    """What the model in ``out`` (about to be retrained) was: its ensemble test and validation
    metrics, the model it was started from ("" a random start) and its model and training
    settings (read through ModelConfig / TrainConfig, so settings a config.json leaves at their
    default are filled in), for ``metrics.json["previous"]`` and the card's old -> new line;
    None when ``out`` holds no model with test metrics."""
    artifact = Artifact(out)
    if not artifact.exists():
        return None
    metrics = artifact.read_metrics()
    test = metrics.get("test", {}).get("ensemble")
    if not test:
        return None
    config = artifact.read_config()
    keys = ("hidden_dim", "heads", "layers", "num_seeds", "dropout", "head_hidden")
    train_keys = ("epochs", "batch_size", "lr", "patience", "ema_epochs", "weight_decay_on")
    return {
        "test": test,
        "val": metrics.get("val", {}).get("ensemble", {}),
        "init": config.provenance.finetuned_from,
        "data": config.provenance.data,
        "model": {k: getattr(config.model, k) for k in keys},
        "train": {k: getattr(config.train, k) for k in train_keys},
    }


def other_data(previous: dict[str, Any], recipe: Recipe) -> bool:
    """True when the replaced model (:func:`replaced_model`) names a data file other than the
    recipe's (its test metrics are then on other molecules: :func:`held_out_comparison`); a
    model that names no file (a table passed in Python) counts as trained on the recipe's."""
    data = str(previous.get("data") or "")
    return bool(data) and not data.startswith("<") and Path(data).name != Path(recipe.data).name


def train(recipe: Recipe, out: Path) -> None:
    """Train the ensemble of ``recipe`` into ``out`` (replaced if it exists). A replaced model
    trained on other data is compared with the new one on molecules neither trained on
    (:func:`held_out_comparison`, in ``metrics.json["previous"]["held_out"]``)."""
    import tempfile

    from molprop.featurize import FeaturizerConfig
    from molprop.training.train import TrainRequest, run_train

    previous = replaced_model(out)
    with tempfile.TemporaryDirectory() as tmp:
        replaced = None
        if previous and other_data(previous, recipe):
            replaced = Path(tmp) / "replaced"
            shutil.copytree(out, replaced)
        if out.exists():
            shutil.rmtree(out)
        structures: dict[str, Any] = {}
        if recipe.structures:
            structures = {
                "data": structure_file(recipe, Path(tmp)),
                "split_type": "column",
                "split_column": "split",
                "featurizer": FeaturizerConfig("3d", dict(recipe.featurizer_params)),
                "model": {**MODEL_3D, **recipe.model},
            }
        given = {"split_type": "column", "split_column": "split"} if recipe.given_split else {}
        request = TrainRequest(
            **{
                "data": load_data(recipe) if not recipe.structures else None,
                "smiles_column": recipe.smiles_column,
                "target_columns": [recipe.data_column],
                "out": out,
                "task_type": recipe.task_type,
                "split_type": "scaffold",
                # a started model takes its architecture from the start (MODEL too)
                "model": {} if recipe.init else dict(MODEL),
                "train": train_config(recipe),
                "units": [recipe.unit],
                "name": recipe.name,
                "progress": False,
                "init": recipe.init or None,
                **given,
                **structures,
            }
        )
        run_train(request)
        artifact = Artifact(out)
        artifact.rename_targets([recipe.target])  # the shipped name (the data's column: former)
        if recipe.former_names:
            keep_former_names(out, recipe.former_names)
        artifact.remove_logs()  # training curves are not shipped
        artifact.remove_invalid_rows()  # rows RDKit could not read are logged; never served
        if recipe.structures:  # the data file was a temporary copy with the split column
            artifact.set_provenance(data=str(Path("data") / "qm9" / Path(recipe.data).name))
        else:  # the data file (a given split: rows of it) as the repository names it
            artifact.set_provenance(data=recipe.data_path)
        start = artifact.read_config().provenance.finetuned_from
        if start:
            artifact.set_provenance(finetuned_from=portable_start(start))
        if recipe.given_split:  # trained on rows of the data file with their split
            artifact.update_metrics(split_source=split_source(recipe))
        if previous and replaced is not None:
            previous["held_out"] = held_out_comparison(recipe, out, replaced)
        if previous:
            artifact.update_metrics(previous=previous)


def portable_start(start: str) -> str:
    """The starting model as the repository names it (``pretrained/foundation``): a path in
    this checkout, or a shipped model (an editable install's shipped models may be another
    checkout's), relative; any other path as it is."""
    from molprop.artifact.resolve import shipped_models_dir

    path = Path(start)
    if not path.is_absolute():
        return start
    if path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    if path.parent == shipped_models_dir():
        return f"{PRETRAINED.name}/{path.name}"
    return start


def keep_former_names(out: Path, names: Sequence[str]) -> None:
    """Record ``names`` as the targets' former names in ``config.json`` (still accepted where a
    target is named): the names the model this one replaced still answered to."""
    from dataclasses import replace

    from molprop.artifact.store import load_config, write_config

    config = load_config(out)
    task = replace(config.task, former_names=tuple(names))
    write_config(out, replace(config, task=task))


def split_source(recipe: Recipe) -> dict[str, Any]:
    """Where the split of a recipe with a given split comes from (``metrics.json``
    ``split_source``, shown on the card): the model whose ``split.csv`` it follows and, with
    ``keep_out``, that file's test molecules: how many, how many are in this data and how
    many of those were removed from train and validation (:func:`split_frame`)."""
    from molprop.io.table import read_table

    source: dict[str, Any] = {"split_from": recipe.split_from}
    if recipe.keep_out:
        held = kept_out_molecules(recipe)
        data = read_table(DATA / recipe.data)
        keys = data[recipe.smiles_column].map(molecule_key)
        kept = split_frame(recipe)
        in_test = kept.loc[kept["split"] == "test", recipe.smiles_column].map(molecule_key)
        source["kept_out"] = {
            "file": (DATA / recipe.keep_out).resolve().relative_to(REPO).as_posix(),
            "test_molecules": len(held),
            "in_data": int(keys.isin(held).sum()),
            "in_test": int(in_test.isin(held).sum()),
            "removed": int(keys.isin(held).sum() - in_test.isin(held).sum()),
        }
    return source


def _scores(task_type: str, y: Any, p: Any) -> dict[str, Any]:
    from molprop.training.metrics import classification_metrics, regression_metrics

    metrics = regression_metrics if task_type == "regression" else classification_metrics
    return {**metrics(y, p), "n": len(y)}


def _both_scored(
    task_type: str, models: dict[str, Path], smiles: list[str], y: Any
) -> dict[str, Any]:
    """Each model of ``models`` (key -> directory) on ``smiles`` (labels ``y``), predicted as a
    user predicts, scored on the molecules every model predicted."""
    import numpy as np

    from molprop.inference import Predictor

    predicted = {}
    for key, directory in models.items():
        predictor = Predictor.from_pretrained(directory)
        frame = predictor.predict(smiles, interval=None)
        values = frame[predictor.target_names[0]].to_numpy(dtype=float)
        predicted[key] = np.where(frame["status"].eq("ok").to_numpy(), values, np.nan)
    both = np.logical_and.reduce([np.isfinite(v) for v in predicted.values()])
    y = np.asarray(y, dtype=float)
    result: dict[str, Any] = {"n": int(both.sum()), "listed": len(smiles)}
    for key, values in predicted.items():
        result[key] = _scores(task_type, y[both], values[both])
    return result


def held_out_comparison(recipe: Recipe, out: Path, replaced: Path) -> dict[str, Any]:
    """The model in ``out`` against the model it replaced (trained on other data; a copy in
    ``replaced``) on molecules neither trained on, each predicted from its SMILES as a user
    predicts and scored where both predicted (molecules matched by InChIKey):

    - ``common``: this model's test molecules that the replaced model did not train or
      validate on, with this data's labels (the decision: replace only if this model wins);
    - ``replaced_test``: the replaced model's own test molecules, with its data's labels, that
      this model did not train or validate on (context: the replaced model's home ground).
    """
    from molprop.io.table import read_table

    def seen(split: pd.DataFrame) -> set[str]:
        return {molecule_key(s) for s in split.loc[split["split"] != "test", "smiles"]}

    def test_rows(frame: pd.DataFrame, split: pd.DataFrame, smiles: str) -> pd.DataFrame:
        test = split[split["split"] == "test"]
        rows = frame.iloc[test["row"].to_numpy()].reset_index(drop=True)
        if rows[smiles].tolist() != test["smiles"].tolist():
            raise RuntimeError("split.csv does not index the model's data")
        return rows

    models = {"replaced": replaced, "this_model": out}
    new_split, old_split = stored_split(out), stored_split(replaced)
    data = load_data(recipe)
    table = data if isinstance(data, pd.DataFrame) else read_table(data)
    frame = test_rows(table, new_split, recipe.smiles_column)
    old_seen = seen(old_split)
    frame = frame[[molecule_key(s) not in old_seen for s in frame[recipe.smiles_column]]]
    common = _both_scored(
        recipe.task_type, models, frame[recipe.smiles_column].tolist(), frame[recipe.data_column]
    )
    old = Artifact(replaced).read_config()
    old_path = Path(old.provenance.data)
    old_frame = read_table(old_path if old_path.is_absolute() else REPO / old_path)
    names = (*old.task.former_names, *old.task.target_names)
    column = next(c for c in names if c in old_frame.columns)
    old_test = test_rows(old_frame, old_split, "smiles")
    new_seen = seen(new_split)
    old_test = old_test[[molecule_key(s) not in new_seen for s in old_test["smiles"]]]
    own = _both_scored(recipe.task_type, models, old_test["smiles"].tolist(), old_test[column])
    result = {
        "replaced_data": old.provenance.data,
        "common": common,
        "replaced_test": {**own, "of": int((old_split["split"] == "test").sum())},
    }
    log.info("held-out comparison with the replaced model: %s", result)
    return result


def held_out_note(recipe: Recipe, previous: dict[str, Any]) -> str:
    """The card's line on the replaced model trained on other data
    (:func:`held_out_comparison`)."""
    held = previous["held_out"]
    common, own = held["common"], held["replaced_test"]
    keys = ("rmse", "mae", "r2") if recipe.task_type == "regression" else ("roc_auc", "mcc")

    def shown(part: dict[str, Any]) -> str:
        return ", ".join(
            f"{k} {part['replaced'][k]:.3f} -> **{part['this_model'][k]:.3f}**" for k in keys
        )

    return (
        f"Replaces the `{recipe.name}` model trained on `{held['replaced_data']}` (its test "
        "metrics were on other molecules). On the "
        f"{common['n']} test molecules of this model that the replaced model did not train or "
        f"validate on (neither model trained on them; this data's labels), replaced -> this "
        f"model: {shown(common)}. On the replaced model's own test molecules ({own['n']} of "
        f"{own['of']}, its data's labels; none in this model's train or validation part): "
        f"{shown(own)}."
    )


def split_note(recipe: Recipe, source: dict[str, Any]) -> str:
    """The card's line on a given split (:func:`split_source`)."""
    note = (
        f"Split: the scaffold split of `{source['split_from']}` (its `split.csv`, 80/10/10, "
        "seed 0, of its whole table) on this data's molecules, so this model and "
        f"`{source['split_from']}` are scored on the same test molecules"
    )
    kept = source.get("kept_out")
    if kept:
        note += (
            f"; the {kept['test_molecules']} test molecules of the scaffold split of "
            f"`{kept['file']}` (80/10/10, seed 0: the test part of the model trained on it) are "
            f"kept out of train and validation: {kept['in_data']} are in this data, "
            f"{kept['in_test']} of them in its test part, {kept['removed']} removed"
        )
    return note + "."


def comparison_notes(recipe: Recipe, comparison: dict[str, Any]) -> list[str]:
    """The card's bullets on which input this structure model expects and what it scores on
    each (``comparison``: :func:`input_comparison`)."""
    geo, conf, two = comparison["dft_geometry"], comparison["conformer"], comparison["smiles_2d"]
    common = comparison["common"]
    unit = recipe.unit
    notes = [
        f"Split: the scaffold split of `{recipe.split_from}` (its `split.csv`), so both models "
        "are scored on the same test molecules.",
        f"Which input: on the {comparison['n_test']} test molecules this model scores MAE "
        f"**{geo['mae']:.3f} {unit}** on their B3LYP geometries (a structure file, as trained), "
        f"**{conf['mae']:.3f} {unit}** on RDKit ETKDGv3/MMFF conformers of their SMILES (what a "
        f"SMILES request to this model gets; {conf['failed']} SMILES could not be embedded and "
        f"are `invalid_input` rows), and the 2D `{two['model']}` scores "
        f"**{two['mae']:.3f} {unit}** on their SMILES (on the {common['n']} molecules all three "
        f"predicted: {common['dft_geometry_mae']:.3f} / {common['conformer_mae']:.3f} / "
        f"{common['smiles_2d_mae']:.3f}).",
    ]
    on_dft = "lower" if common["dft_geometry_mae"] < common["smiles_2d_mae"] else "not lower"
    on_conf = "lower" if common["conformer_mae"] < common["smiles_2d_mae"] else "not lower"
    notes.append(
        "Expected input: a DFT-quality (B3LYP-like) 3D structure (xyz / extxyz / SDF / ASE / "
        f"pymatgen); there its MAE is {on_dft} than the 2D model's. On SMILES (conformers) its "
        f"MAE is {on_conf} than `{two['model']}`'s"
        + (f": for SMILES use `{two['model']}`." if on_conf == "not lower" else ".")
    )
    return notes


def changed_settings(
    previous: dict[str, Any], model: Any, train: TrainConfig
) -> list[tuple[str, Any, Any]]:
    """(setting, replaced model's value, this model's value) for every recorded setting of
    ``previous`` (:func:`replaced_model`) that differs from this artifact's ``model`` /
    ``train`` (its ModelConfig and TrainConfig); the recipe's epochs are not a change."""
    return [
        (k, v, getattr(now, k))
        for part, now in ((previous.get("model", {}), model), (previous.get("train", {}), train))
        for k, v in part.items()
        if v is not None and k != "epochs" and hasattr(now, k) and getattr(now, k) != v
    ]


def _old_to_new(old: dict[str, Any], new: dict[str, Any]) -> str:
    """``metric old -> **new**`` for each metric both ensembles' entries have."""
    return ", ".join(
        f"{k} {old[k]:.3f} -> **{new[k]:.3f}**"
        for k in ("rmse", "mae", "r2", "roc_auc", "mcc", "accuracy")
        if isinstance(old.get(k), float) and isinstance(new.get(k), float)
    )


def previous_note(
    previous: dict[str, Any],
    test: dict[str, Any],
    model: Any,
    train: TrainConfig,
    start: str = "",
    val: dict[str, Any] | None = None,
) -> str:
    """The card's line on the model this one replaced: its settings that differ from this
    model's (:func:`changed_settings`), its start where it differs from this model's
    (``start``: the model this one was fine-tuned from, "" a random start), its ensemble
    validation metrics -> this model's (``val``; what the replacement was decided on) and its
    ensemble test metrics -> this model's (same split, same rows)."""
    changed = [f"{k} {old}" for k, old, _ in changed_settings(previous, model, train)]
    old_start = previous.get("init", "")
    if start and start != old_start:
        note = (
            f"Retrained with `molprop train`'s default settings from `{start}` (`--init "
            f"{Path(start).name}`: its encoder and readout, a fresh head); the model it replaced "
            + (f"started from `{old_start}`" if old_start else "was a random start")
            + (" and had " + ", ".join(changed) if changed else " with the same settings")
        )
    else:
        note = "Retrained with `molprop train`'s default recipe; the model it replaced had " + (
            ", ".join(changed) if changed else "the same settings"
        )
    if val and previous.get("val"):
        note += (
            ". A retrain replaces the shipped model only when its ensemble validation metric is "
            "better (validation split, replaced -> this model): "
            + _old_to_new(previous["val"], val)
        )
    return (
        note
        + ". Ensemble test metrics, replaced -> this model (same split): "
        + _old_to_new(previous.get("test", {}), test)
        + "."
    )


def card_root(out: Path) -> Path:
    """The checkout the card's paths are shown relative to: the one whose ``data/`` the model
    in ``out`` was trained on (its recorded data path ends in ``data/...``), else this one, so
    that a card rewritten in another checkout still reads ``data/moleculenet/...``."""
    data = Path(Artifact(out).read_config().provenance.data or ".")
    parts = data.parts
    if data.is_absolute() and "data" in parts:
        return Path(*parts[: len(parts) - 1 - parts[::-1].index("data")])
    return REPO


def panel_notes(
    model: str, targets: list[str] | tuple[str, ...], models: Path = PRETRAINED
) -> list[str]:
    """Card bullets for the shipped panels (``<models>/panels/*.json``) that answer one of
    ``model``'s ``targets`` with another model, or a target of another model with ``model``
    (the panel file's ``served_by``)."""
    from molprop.artifact.panel import read_panel

    notes = []
    shipped: set[Path] | None = None  # the model directories, listed once where needed
    for path in sorted((models / PANELS_DIR).glob(f"*{PANEL_SUFFIX}")):
        panel = read_panel(path)
        for target, owner in sorted(panel.served_by.items()):
            if target not in targets:
                continue
            if shipped is None:
                shipped = set(artifacts_in(models))
            others = [
                m
                for m in panel.models
                if m != owner
                and (models / m) in shipped
                and target in Artifact(models / m).read_config().task.target_names
            ]
            if owner == model:
                notes.append(
                    f"The `{panel.name}` panel (`molprop predict --model {panel.name}`) answers "
                    f"`{target}` with this model (its panel file's `served_by`), not with the "
                    f"head of the same name of {', '.join(f'`{m}`' for m in others)}: value, "
                    "spread, interval, percentile and domain are this model's."
                )
            elif model in panel.models:
                notes.append(
                    f"The `{panel.name}` panel does not serve this model's `{target}`: it "
                    f"answers that endpoint with the model `{owner}` (its panel file's "
                    "`served_by`): value, spread, interval, percentile and domain are that "
                    "model's."
                )
    return notes


def write_recipe_card(recipe: Recipe, out: Path) -> Path:
    """Write ``card.md`` of the model in ``out`` from its artifact and the recipe's texts."""
    artifact = Artifact(out)
    notes = ["Small CPU-friendly configuration; larger models trained longer are more accurate."]
    metrics = artifact.read_metrics()
    if metrics.get("previous", {}).get("held_out"):
        notes.insert(0, held_out_note(recipe, metrics["previous"]))
    elif metrics.get("previous") and metrics.get("test", {}).get("ensemble"):
        config = artifact.read_config()
        notes.insert(
            0,
            previous_note(
                metrics["previous"],
                metrics["test"]["ensemble"],
                config.model,
                config.train,
                start=config.provenance.finetuned_from,
                val=metrics.get("val", {}).get("ensemble"),
            ),
        )
    if metrics.get("split_source"):
        notes.insert(0, split_note(recipe, metrics["split_source"]))
    comparison = metrics.get("input_comparison")
    if comparison:
        notes = comparison_notes(recipe, comparison) + notes
    notes = panel_notes(out.name, artifact.read_config().task.target_names, out.parent) + notes
    if recipe.structures:
        notes.insert(
            0,
            "`in_domain` is computed from the fingerprint of the molecule the model read: a "
            "SMILES request's standardised SMILES, a structure's molecule as perceived from its "
            "coordinates (a structure whose bonds cannot be perceived has similarity 0: out of "
            "domain); the intervals use the domain's bins for both.",
        )

    return artifact.write_card(
        CardTexts(
            title=recipe.description,
            data_source=recipe.source,
            licence=recipe.licence,
            intended_use=recipe.intended_use,
            reference=recipe.chemprop_reference,
            reproduce="make pretrained",
            notes=notes,
            root=card_root(out),
        )
    )


def stored_split(out: Path) -> pd.DataFrame:
    """The ``split.csv`` (row, smiles, split) of the model in ``out``."""
    split = Artifact(out).read_split()
    if split is None:
        raise RuntimeError(f"{out} has no split: retrain it (--stage train)")
    return split


def split_rows(out: Path, parts: Sequence[str]) -> pd.DataFrame:
    """The rows of the model's ``split.csv`` in any of ``parts`` (an entry ``"train+val"``
    joins parts), in the file's order."""
    split = stored_split(out)
    names = {name for part in parts for name in part.split("+")}
    return split[split["split"].isin(names)].reset_index(drop=True)


def part_sets(
    table: MoleculeTable, split: pd.DataFrame, parts: Sequence[str], out: Path, source: str
) -> tuple[LabelledSet, ...]:
    """One labelled set per entry of ``parts`` from ``table`` (read from the rows of
    ``split``, in its order: the SMILES are checked against it; ``out`` the model, ``source`` its data, named
    in the error)."""
    import numpy as np

    from molprop.training.tables import table_set

    if len(table) != len(split) or table.smiles != split["smiles"].tolist():
        raise RuntimeError(f"{out}/split.csv does not match {source}")
    labels = split["split"].to_numpy()
    return tuple(table_set(table, np.flatnonzero(np.isin(labels, p.split("+")))) for p in parts)


def split_sets(recipe: Recipe, out: Path, parts: Sequence[str] = ("val", "test")):
    """One :class:`~molprop.training.tables.LabelledSet` per entry of ``parts`` (default:
    validation, test) of the model in ``out``: the rows its ``split.csv`` puts there (an entry
    ``"train+val"`` joins parts), read from the recipe's data with the model's featuriser and
    the training table loader (the SMILES are checked against ``split.csv``; a structure
    recipe reads the geometries of those rows)."""
    import tempfile

    from molprop.io.table import read_table
    from molprop.training.tables import TableSpec, load_table

    config = Artifact(out).read_config()
    split = split_rows(out, parts)
    names = tuple(sorted(set(split["split"])))
    with tempfile.TemporaryDirectory() as tmp:
        if recipe.structures:
            data: str | Path | pd.DataFrame = structure_file(recipe, Path(tmp), names)
        else:
            frame = load_data(recipe)
            frame = frame if isinstance(frame, pd.DataFrame) else read_table(frame)
            data = frame.iloc[split["row"].to_numpy()].reset_index(drop=True)
        spec = TableSpec(
            data, recipe.smiles_column, [recipe.data_column], config.featurizer, progress=False
        )
        table = load_table(spec)
    return part_sets(table, split, parts, out, recipe.data)


def calibrate(recipe: Recipe, out: Path) -> None:
    """Calibrate the model in ``out`` on its validation split, score it on its test split and
    add the ``calibration`` entry to ``metrics.json`` (weights and other metrics unchanged)."""
    from molprop.training.calibrate import calibrate_artifact

    val, test = split_sets(recipe, out)
    report = calibrate_artifact(out, val, test)
    Artifact(out).update_metrics(calibration=report)


def calibrate_cv(
    recipe: Recipe, out: Path, work: Path | None = None, threads: int | None = 1
) -> None:
    """Calibrate the model in ``out`` on out-of-fold predictions of its train + validation
    rows (5-fold scaffold cross-validation, each fold an ensemble trained with the recipe; fold
    models in ``work`` or a temporary directory; ``threads`` torch threads), score it on its
    test split and add the ``calibration`` entry to ``metrics.json`` (weights unchanged)."""
    from molprop.training.cv_calibrate import CrossValidation, calibrate_artifact_cv

    stored = Artifact(out).read_config().train
    if stored != train_config(recipe):
        raise RuntimeError(
            f"{out}/config.json was trained with {stored}, not the recipe's "
            f"{train_config(recipe)}: retrain it (--stage train) before calibrate-cv"
        )
    trainval, test = split_sets(recipe, out, ("train+val", "test"))
    cv = CrossValidation(work_dir=work, threads=threads)
    report = calibrate_artifact_cv(out, trainval, test, cv, what="train+val")
    Artifact(out).update_metrics(calibration=report)


def input_comparison(recipe: Recipe, out: Path) -> dict[str, Any]:
    """Test MAE of the structure model in ``out`` fed as a user feeds it: the test molecules'
    B3LYP geometries as a structure file, and their SMILES (one seeded RDKit/MMFF conformer
    each); and of the 2D model ``recipe.split_from`` on the same SMILES. ``common``: the three
    MAEs over the molecules every input predicted."""
    import tempfile

    import numpy as np

    from molprop.chem.structures import read_ase_frames
    from molprop.inference import Predictor
    from molprop.inference.rows import output_name

    split = stored_split(out)
    smiles = split.loc[split["split"] == "test", "smiles"].tolist()
    model = Predictor.from_pretrained(out)
    with tempfile.TemporaryDirectory() as tmp:
        path = structure_file(recipe, Path(tmp), ("test",))
        truth = np.array([a.info[recipe.target] for a in read_ase_frames(path, path.name)])
        on_geometry = model.predict_structure_file(path)
    # the frames carry the truth under the target's name, so the prediction is pred_<target>
    pred = output_name(recipe.target, [recipe.target])
    on_geometry = on_geometry.drop(columns=recipe.target).rename(columns={pred: recipe.target})
    if on_geometry["label"].tolist() != smiles:
        raise RuntimeError(f"{out}: the test structures are not split.csv's test molecules")
    on_conformer = model.predict(smiles)
    on_smiles_2d = Predictor.from_pretrained(PRETRAINED / recipe.split_from).predict(smiles)
    t = recipe.target
    frames = {"dft_geometry": on_geometry, "conformer": on_conformer, "smiles_2d": on_smiles_2d}
    ok = {k: f["status"].eq("ok").to_numpy() for k, f in frames.items()}
    common = np.logical_and.reduce(list(ok.values()))

    def mae(frame: pd.DataFrame, rows: np.ndarray) -> float:
        return float(np.abs(frame[t].to_numpy(dtype=float)[rows] - truth[rows]).mean())

    result: dict[str, Any] = {"n_test": len(smiles), "target": t}
    for key, frame in frames.items():
        result[key] = {"mae": mae(frame, ok[key]), "n": int(ok[key].sum())}
        result[key]["failed"] = len(smiles) - result[key]["n"]
    result["smiles_2d"]["model"] = recipe.split_from
    result["common"] = {"n": int(common.sum())} | {
        f"{key}_mae": mae(frame, common) for key, frame in frames.items()
    }
    log.info("input comparison of %s: %s", out, result)
    return result


def finish(recipe: Recipe, out: Path, work: Path | None = None, threads: int | None = 1) -> None:
    """Add the applicability domain, calibrate (as the recipe says) and write the card (no
    retraining of the shipped weights); a structure model also gets its input comparison
    (:func:`input_comparison`) in ``metrics.json``."""
    Artifact(out).add_domain()
    if recipe.calibration == "cv":
        calibrate_cv(recipe, out, work, threads)
    else:
        calibrate(recipe, out)
    if recipe.structures:
        Artifact(out).update_metrics(input_comparison=input_comparison(recipe, out))
    reference(out)
    write_recipe_card(recipe, out)


#: what the percentile reference of every shipped model is called on its card and in its output
REFERENCE_NAME = "approved drugs (ClinTox FDA-approved, data/admet/approved_drugs.csv.gz)"


def reference(out: Path) -> None:
    """Store the model's predictions over the approved-drug set (percentiles at request time)."""
    from molprop.training.reference import fit_reference

    fit_reference(out, name=REFERENCE_NAME)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(RECIPES), help="models to build")
    parser.add_argument(
        "--stage",
        choices=["all", "train", "finish", "calibrate", "calibrate-cv", "reference", "card"],
        default="all",
        help="finish: domain + calibration (as the recipe says) + card; calibrate: "
        "calibration on the validation split + card; calibrate-cv: calibration on "
        "out-of-fold predictions of train+val (5-fold scaffold CV) + card; reference: "
        "predictions over the approved-drug set (percentiles) + card; card: card.md only",
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
        if args.stage == "reference":
            reference(out)
        if args.stage in ("calibrate", "calibrate-cv", "reference", "card"):
            write_recipe_card(recipe, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
