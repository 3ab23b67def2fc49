"""Recipes for the shipped ADMET models (``make pretrained-admet``).

Three multitask models cover the endpoints of ``data/admet/endpoints.csv``; each is an
ensemble fine-tuned from the foundation model (``molprop train --init foundation``: its
architecture, featuriser, encoder and readout, a fresh head with one output per endpoint):

- ``admet_tox21``: the twelve Tox21 assays (classification, one molecule set);
- ``admet_classification``: BBB permeability (B3DB), Ames mutagenicity, clinical-trial
  toxicity (ClinTox);
- ``admet_regression``: solubility, lipophilicity, hydration free energy, logBB, plasma
  protein binding, clearances, CYP pIC50s, LD50.

The endpoint tables are joined on InChIKey (a molecule measured for several endpoints is one row;
a missing label is masked in the loss), split by scaffold (80/10/10, seed 0), calibrated
(conformal intervals per regression target, Platt scaling per classification target) and scored
on the test part. The classifiers are calibrated on the validation part; ``admet_regression`` on
out-of-fold predictions of train + validation (5-fold scaffold cross-validation: five more
ensembles fine-tuned from the foundation model, about 80 minutes on one thread), which held the
90 % coverage criterion on more endpoints of the test part (10 of 13 against 9:
``benchmarks.admet_panel.CV_SHIP_RULE``, docs/results/admet.md). The output name of each target
is the endpoint's name, its unit the ``unit`` of ``endpoints.csv``::

    python -m molprop.pretrained_admet                       # all three
    python -m molprop.pretrained_admet admet_tox21           # one
    python -m molprop.pretrained_admet --stage calibrate     # recalibrate (as the recipe says)
    python -m molprop.pretrained_admet --stage calibrate-cv admet_regression --work DIR
        # calibrate on out-of-fold predictions of train + validation (5 fold ensembles)
    python -m molprop.pretrained_admet --stage reference     # percentiles + card, no training
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from molprop.artifact import Artifact, CardTexts
from molprop.artifact.calibration import DIFFICULTIES
from molprop.models.config import PRESETS, TaskType, TrainConfig

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
ADMET = REPO / "data" / "admet"
PRETRAINED = REPO / "pretrained"
#: what every ADMET model starts from (a model name, resolved like ``--init``)
INIT = "foundation"


@dataclass(frozen=True)
class AdmetGroup:
    """One shipped multitask model: its endpoints (rows of ``endpoints.csv``) and budget."""

    name: str
    endpoints: tuple[str, ...]
    task_type: TaskType
    epochs: int
    intended_use: str
    #: what its calibration is fitted on: ``"validation"`` the validation split (by training),
    #: or ``"cv"`` out-of-fold predictions of train + validation (:func:`calibrate_cv`, after
    #: training), as ``benchmarks.admet_panel.CV_SHIP_RULE`` decided
    calibration: str = "validation"
    #: the conformal difficulty of a cross-validated calibration (``"std"`` or
    #: ``"std+novelty"``: :func:`molprop.training.calibration_fit.fit_conformal`), as
    #: ``benchmarks.admet_panel.NOVELTY_SHIP_RULE`` decided
    cv_difficulty: str = "std+novelty"


def endpoint_table() -> pd.DataFrame:
    """``data/admet/endpoints.csv``: one row per endpoint (name, task, label, unit, ...)."""
    return pd.read_csv(ADMET / "endpoints.csv", dtype=str).set_index("name")


def _group_endpoints(task: str, prefix: str = "", exclude_prefix: str = "") -> tuple[str, ...]:
    table = endpoint_table()
    names = [str(n) for n in table.index[table["task"] == task]]  # text: read with dtype=str
    return tuple(
        n
        for n in names
        if n.startswith(prefix) and not (exclude_prefix and n.startswith(exclude_prefix))
    )


def groups() -> dict[str, AdmetGroup]:
    """The shipped ADMET models, by name."""
    return {
        g.name: g
        for g in (
            AdmetGroup(
                "admet_tox21",
                _group_endpoints("classification", prefix="tox21_"),
                "classification",
                30,
                "flagging likely activity in the twelve Tox21 nuclear-receptor and stress-response "
                "assays (probability of activity)",
            ),
            AdmetGroup(
                "admet_classification",
                _group_endpoints("classification", exclude_prefix="tox21_"),
                "classification",
                15,
                "early flags for blood-brain barrier permeability, Ames mutagenicity and "
                "clinical-trial toxicity of drug-like molecules (probabilities)",
            ),
            AdmetGroup(
                "admet_regression",
                _group_endpoints("regression"),
                "regression",
                10,
                "estimating physicochemical, distribution, clearance, CYP-inhibition and "
                "acute-toxicity values of drug-like molecules",
                calibration="cv",
                cv_difficulty="std",
            ),
        )
    }


def merged_table(group: AdmetGroup) -> pd.DataFrame:
    """The group's endpoint tables joined on InChIKey: ``smiles`` (the first table's) and one
    column per endpoint (its label; empty where the molecule was not measured), rows in the
    order of first appearance."""
    table = endpoint_table()
    merged: pd.DataFrame | None = None
    for name in group.endpoints:
        label = table.loc[name, "label"]
        frame = pd.read_csv(ADMET / f"{name}.csv.gz", dtype={"smiles": str, "inchikey": str})
        frame = frame[["inchikey", "smiles", label]].rename(columns={label: name})
        if frame["inchikey"].duplicated().any():
            raise RuntimeError(f"{name}: duplicate InChIKeys (the curated tables are unique)")
        if merged is None:
            merged = frame
        else:
            merged = merged.merge(frame, on="inchikey", how="outer", suffixes=("", "_other"))
            merged["smiles"] = merged["smiles"].fillna(merged.pop("smiles_other"))
    assert merged is not None
    return merged[["smiles", *group.endpoints]].reset_index(drop=True)


def train_config(group: AdmetGroup) -> TrainConfig:
    """The default preset's training settings with the group's epochs, seed 0, 2 members."""
    preset = PRESETS["default"]["train"]
    return TrainConfig(**{**preset, "epochs": group.epochs, "seed": 0, "ensemble_size": 2})


def train(group: AdmetGroup, out: Path, init: str = INIT) -> None:
    """Fine-tune the group's ensemble from ``init`` into ``out`` (replaced if it exists)."""
    from molprop.training.train import TrainRequest, run_train

    if out.exists():
        shutil.rmtree(out)
    units = [str(endpoint_table().loc[n, "unit"]) for n in group.endpoints]  # all set
    if group.task_type == "classification":
        units = ["probability"] * len(group.endpoints)
    request = TrainRequest(
        data=merged_table(group),
        smiles_column="smiles",
        target_columns=list(group.endpoints),
        out=out,
        task_type=group.task_type,
        split_type="scaffold",
        train=train_config(group),
        units=units,
        name=group.name,
        progress=False,
        init=init,
    )
    run_train(request)
    artifact = Artifact(out)
    artifact.remove_logs()  # training curves are not shipped
    # the rows RDKit could not read are logged by training; serving never reads the list
    artifact.remove_invalid_rows()


def split_sets(group: AdmetGroup, out: Path, wanted: tuple[str, ...] = ("val", "test")) -> tuple:
    """The labelled sets of the parts ``wanted`` of the model's ``split.csv`` (a part such
    as ``"train+val"`` joins several), read from the merged table as training read them."""
    from molprop.pretrained_recipes import part_sets, split_rows
    from molprop.training.tables import TableSpec, load_table

    split = split_rows(out, wanted)
    data = merged_table(group).iloc[split["row"].to_numpy()].reset_index(drop=True)
    featurizer = Artifact(out).read_config().featurizer
    table = load_table(TableSpec(data, "smiles", list(group.endpoints), featurizer, progress=False))
    return part_sets(table, split, wanted, out, "the merged ADMET table")


def calibrate(group: AdmetGroup, out: Path) -> None:
    """Recalibrate the model in ``out`` on its validation split and measure it on its test
    split (``metrics.json["calibration"]``), weights and other metrics unchanged."""
    from molprop.training.calibrate import calibrate_artifact

    val, test = split_sets(group, out)
    report = calibrate_artifact(out, val, test, strict=False)
    Artifact(out).update_metrics(calibration=report)


def calibrate_cv(
    group: AdmetGroup,
    out: Path,
    work: Path | None = None,
    threads: int | None = 1,
    only_folds: tuple[int, ...] | None = None,
    difficulty: str | None = None,
) -> None:
    """Calibrate the model in ``out`` on out-of-fold predictions of its train + validation
    rows (5-fold scaffold cross-validation, each fold an ensemble fine-tuned as the model was;
    fold models in ``work`` or a temporary directory), measure it on its test split
    (``metrics.json["calibration"]``), weights unchanged. ``only_folds``: train just those
    fold models into ``work`` and fit nothing (folds spread over processes); ``difficulty``:
    the conformal difficulty (None: the recipe's ``cv_difficulty``)."""
    from molprop.training.cv_calibrate import CrossValidation, calibrate_artifact_cv, train_folds

    cv = CrossValidation(work_dir=work, threads=threads, only_folds=only_folds)
    if only_folds is not None:
        (trainval,) = split_sets(group, out, ("train+val",))
        log.info("fold models %s of %s ready in %s", train_folds(out, trainval, cv), out, work)
        return
    trainval, test = split_sets(group, out, ("train+val", "test"))
    chosen = group.cv_difficulty if difficulty is None else difficulty
    report = calibrate_artifact_cv(out, trainval, test, cv, "train+val", chosen)
    Artifact(out).update_metrics(calibration=report)


def portable_config(out: Path) -> None:
    """``config.json`` names its data and starting model relative to the repository (not by
    this machine's paths): ``data/admet`` and ``pretrained/foundation``."""
    artifact = Artifact(out)
    changes = {"data": "data/admet (endpoint tables joined on InChIKey: molprop.pretrained_admet)"}
    start = Path(artifact.read_config().provenance.finetuned_from)
    if start.is_absolute() and start.is_relative_to(REPO):
        changes["finetuned_from"] = str(start.relative_to(REPO))
    artifact.set_provenance(**changes)


def reference(out: Path) -> None:
    """Percentiles among approved drugs (as every shipped model)."""
    from molprop.pretrained_recipes import reference as fit

    fit(out)


def write_card(group: AdmetGroup, out: Path) -> Path:
    """``card.md`` from ``metrics.json``: data, endpoints with units and sources, split, test
    metrics per endpoint, calibration, domain, percentiles (and the panels that serve one of
    its endpoints from another model: :func:`panel_notes`)."""
    from molprop.pretrained_recipes import panel_notes

    table = endpoint_table()
    sources = "; ".join(f"{n}: {table.loc[n, 'description']!s}" for n in group.endpoints)
    return Artifact(out).write_card(
        CardTexts(
            title=f"{len(group.endpoints)} ADMET endpoints fine-tuned from the foundation model",
            data_source=f"`data/admet/` (data/admet/SOURCES.md): {sources}",
            licence="per table, data/admet/SOURCES.md (MIT, CC0-1.0, CC BY 4.0)",
            intended_use=group.intended_use,
            reproduce=f"make pretrained-admet (python -m molprop.pretrained_admet {group.name})",
            notes=panel_notes(group.name, group.endpoints, out.parent),
            root=REPO,
        )
    )


def main(argv: list[str] | None = None) -> int:
    known = groups()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(known), help="models to build")
    parser.add_argument(
        "--stage",
        choices=["all", "train", "calibrate", "calibrate-cv", "reference", "card"],
        default="all",
        help="calibrate: recalibrate as the recipe says (no retraining: the validation "
        "split, or cross-validation for admet_regression) + card; calibrate-cv: on "
        "out-of-fold predictions of train+val (5-fold scaffold CV, fold ensembles fine-tuned "
        "as the model was) + card",
    )
    parser.add_argument("--out", default=str(PRETRAINED), help="directory of the models")
    parser.add_argument("--init", default=INIT, help="starting model (name or directory)")
    parser.add_argument(
        "--work", default=None, help="calibrate-cv: keep the fold models here (default: temporary)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads of the fold trainings (default 1)"
    )
    parser.add_argument(
        "--folds",
        default=None,
        help="calibrate-cv: only train these fold models into --work (e.g. 0,2), fit nothing; "
        "run once without it to calibrate",
    )
    parser.add_argument(
        "--difficulty",
        choices=list(DIFFICULTIES),
        default=None,
        help="calibrate-cv: the conformal difficulty (default: the recipe's)",
    )
    args = parser.parse_args(argv)
    only = None if args.folds is None else tuple(int(k) for k in args.folds.split(","))
    if only is not None and (args.stage != "calibrate-cv" or args.work is None):
        parser.error("--folds goes with --stage calibrate-cv and --work")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {sorted(known)}")
    for name in args.names:
        group, out = known[name], Path(args.out) / name
        if args.stage in ("all", "train"):
            log.info("training %s (%d endpoints) -> %s", name, len(group.endpoints), out)
            train(group, out, args.init)
        portable_config(out)
        work = None if args.work is None else Path(args.work) / name
        cv = args.stage == "calibrate-cv" or (
            group.calibration == "cv" and args.stage in ("all", "train", "calibrate")
        )  # training calibrated on the validation split; the recipe may say otherwise
        if cv:
            calibrate_cv(group, out, work, args.threads, only, args.difficulty)
            if only is not None:
                continue
        elif args.stage == "calibrate":
            calibrate(group, out)
        if args.stage in ("all", "reference"):
            reference(out)
        write_card(group, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
