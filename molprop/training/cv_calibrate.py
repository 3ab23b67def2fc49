"""Cross-validated (out-of-fold) calibration of an existing artifact.

Split-conformal intervals hold for molecules exchangeable with the calibration molecules. The
validation split alone is small (112 molecules for ESOL) and, under a scaffold split, may be
easier or harder than the test split. Here the calibration set is instead every molecule of a
labelled table (for a trained model: its train + validation rows, never the test rows), each
predicted *out of fold*:

1. the molecules are split into K scaffold-grouped folds
   (:func:`molprop.data.splits.scaffold_folds`: no scaffold in two folds). The largest scaffold
   sets (more than 1/18 of the molecules: for ESOL the acyclic and the benzene sets, 571 of
   1,014 train + validation molecules) are never held out: they stay in every fold's training
   and are no calibration points, because the balanced scaffold split that made the model's
   test part sends exactly such sets to training first (no test molecule comes from one), and a
   fold holding out half the data's chemistry would measure a shift no test set has;
2. for each fold an ensemble is trained with exactly the artifact's recipe (its ``ModelConfig``,
   ``TrainConfig``, ensemble size and seeds, a target scaler fitted on the fold's training
   molecules) on the other folds, early-stopping on a scaffold hold-out of them
   (:func:`molprop.data.splits.scaffold_holdout`, the validation share of the default
   0.8/0.1/0.1 split: 1/9), and predicts the held-out fold: its residuals and ensemble stds;
3. the ``in_domain`` flag of a molecule says whether it is in the applicability domain of the
   fold model that predicted it: the artifact's domain criterion
   (:mod:`molprop.artifact.domain`, threshold refitted the same way) over the fold's training
   molecules, as the artifact's own domain is over its training split. (The artifact's own
   domain would flag every one of its training molecules in domain — each is its own nearest
   neighbour — although the fold model never saw it.)
   Artifacts without a domain get no flags. Likewise a molecule's *novelty* (``1 - max
   Tanimoto similarity to the training set``, which the novelty-scaled difficulty reads) is
   measured against its fold model's training molecules;
4. the artifact's ``calibration.json`` is fitted on those out-of-fold points (the same
   :func:`~molprop.training.calibration_fit.fit_calibration`: Mondrian bins, offset, the
   difficulty asked for — by default the novelty-scaled one with its ``beta`` chosen on the
   out-of-fold molecules — Platt for classifiers). The artifact's weights are never touched.

Fold models are written to a work directory (a temporary one unless given; never next to the
model); a given work directory keeps them, and a fold model there trained on the same recipe and
molecules is reused (an interrupted run resumes at the next fold). Each fold logs a line when it starts and when it ends (held-out RMSE,
seconds); ``threads`` runs the fold trainings with that many torch threads.

A model fine-tuned from another (``config.json``'s ``finetuned_from``: ``molprop train
--init``, every shipped ADMET model) has its fold ensembles fine-tuned the same way: member ``m``
of a fold starts from the encoder and readout of that model's member ``m mod n`` with a fresh
head (:class:`~molprop.training.warm_start.InitSource`), the start found at the recorded path
or, failing that, by its directory's name among the model directories (the shipped
``foundation``); its weights are part of a kept fold model's key. Models with augmented inputs
are refused: that recipe is not in the artifact.

``only_folds`` trains (or reuses) just those folds' models in the kept work directory and fits
nothing, so that folds can be trained by several processes at once; a last run without it
reuses them all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from molprop.artifact import Artifact
from molprop.artifact.calibration import DEFAULT_DIFFICULTY, Calibration
from molprop.artifact.config import ArtifactConfig
from molprop.data.loader import GraphDataset
from molprop.data.splits import scaffold_folds, scaffold_groups, scaffold_holdout
from molprop.errors import ArtifactError, ConfigError, DataError
from molprop.inference import Predictor
from molprop.models.predict import per_atom_counts
from molprop.training.calibrate import raw_predictions, store_calibration
from molprop.training.calibration_fit import fit_calibration
from molprop.training.fit import build_model, fit_ensemble
from molprop.training.tables import LabelledSet, make_task, model_targets, subset
from molprop.training.warm_start import InitSource

log = logging.getLogger(__name__)

#: folds of the cross-validation unless told otherwise
CV_FOLDS = 5
#: fold index of the molecules in every fold's training (see ``CrossValidation.always_train``)
ALWAYS_TRAIN = -2
#: share of a fold's training molecules held out (by scaffold) for early stopping: the
#: validation share of train + validation in the default 0.8 / 0.1 / 0.1 split
INNER_VAL_FRACTION = 1 / 9
#: scaffold sets larger than this share of the cross-validated molecules are never held out:
#: the balanced scaffold split (:func:`~molprop.data.splits.scaffold_split`) puts sets larger
#: than half the validation / test size (0.05 of all molecules, 1/18 of train + validation in
#: the default 0.8 / 0.1 / 0.1 split) into training first, so no test molecule comes from one
ALWAYS_TRAIN_FRACTION = 1 / 18


@dataclass(frozen=True)
class CrossValidation:
    """How to cross-validate: ``folds`` K >= 2, ``seed`` of the fold assignment and of the
    early-stopping hold-outs, ``val_fraction`` of each fold's training molecules held out for
    early stopping, ``work_dir`` for the fold models (None: a temporary directory, removed
    afterwards; given: kept), ``threads`` torch threads of the fold trainings (None: as set),
    ``progress``: per-epoch progress bars (the per-fold log lines are always written).

    ``always_train``: scaffold sets larger than this share of the molecules stay in the
    training part of every fold and are not calibration molecules (they mirror the sets the
    scaffold split sends to training first; see :data:`ALWAYS_TRAIN_FRACTION`); None: every
    set is held out once."""

    folds: int = CV_FOLDS
    seed: int = 0
    val_fraction: float = INNER_VAL_FRACTION
    always_train: float | None = ALWAYS_TRAIN_FRACTION
    work_dir: str | Path | None = None
    threads: int | None = None
    progress: bool = False
    #: train (or reuse) only these folds' models in ``work_dir`` and fit nothing (None: all)
    only_folds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ConfigError(f"cross-validation needs at least 2 folds, got {self.folds}")
        if self.only_folds is not None:
            bad = sorted(set(self.only_folds) - set(range(self.folds)))
            if bad:
                raise ConfigError(
                    f"folds {bad} are not among the {self.folds} folds 0-{self.folds - 1}"
                )
            if self.work_dir is None:
                raise ConfigError("only_folds trains fold models to keep: give a work directory")
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")

    def describe(self, what: str, n: int, n_always_train: int = 0) -> str:
        """The ``fitted_on`` text of a calibration fitted so."""
        text = f"{self.folds}-fold scaffold cross-validation of {what}, {n} molecules"
        if n_always_train:
            text += (
                f" (out of fold; {n_always_train} molecules of the scaffold sets larger than "
                f"{self.always_train:.3g} of {what} stay in every fold's training, as the "
                "scaffold split keeps them out of the test part)"
            )
        return text


@dataclass(frozen=True)
class OutOfFold:
    """Out-of-fold predictions of a labelled set: ``mean`` (n, T), ``std`` (n, T) or None (one
    member), ``in_domain`` (n,) in the applicability domain of the fold model that predicted
    the row and ``novelty`` (n,) its ``1 - max similarity`` to that model's training molecules
    (both None: no domain asked for), ``ok`` (n,) rows predicted out of fold, ``fold`` (n,)
    fold index (-1: not in a fold: invalid or unlabelled; -2 :data:`ALWAYS_TRAIN`: in every
    fold's training), ``report``: folds, molecules per fold, per-fold results."""

    mean: np.ndarray
    std: np.ndarray | None
    ok: np.ndarray
    fold: np.ndarray
    report: dict[str, Any]
    in_domain: np.ndarray | None = None
    novelty: np.ndarray | None = None


def check_retrainable(config: ArtifactConfig) -> InitSource | None:
    """Refuse artifacts whose training recipe is not fully in ``config.json``; the model a
    fine-tuned one started from (None: a random start)."""
    if config.augment is not None or config.model.n_extra:
        raise ConfigError(
            "cross-validated calibration retrains the model from its config.json; this model "
            "takes augmented inputs from a pretrained model, which it cannot reproduce: use "
            "`molprop calibrate --data` (a labelled table) instead"
        )
    return fold_start(config.provenance.finetuned_from)


def fold_start(finetuned_from: str) -> InitSource | None:
    """The model the fold ensembles start from: ``finetuned_from`` as a path, else its last
    component as a model name (``pretrained/foundation`` -> the shipped ``foundation``)."""
    if not finetuned_from:
        return None
    path = Path(finetuned_from)
    tried = [str(path)]
    try:
        return InitSource.open(path)
    except ArtifactError:
        pass
    try:
        return InitSource.open(path.name)
    except ArtifactError:
        tried.append(f"a model named {path.name!r}")
    raise ConfigError(
        f"cross-validated calibration fine-tunes each fold as this model was, from "
        f"{finetuned_from}, which is not here (tried {' and '.join(tried)}): use `molprop "
        "calibrate --data` (a labelled table) instead"
    )


def _start_digest(start: InitSource | None) -> str:
    """What a fold model's start is: its directory's name and its member weights' digest."""
    if start is None:
        return "random"
    h = hashlib.sha256()
    artifact = Artifact(start.directory)
    for i in range(start.config.n_members):
        h.update(artifact.member_path(i).read_bytes())
    return f"{start.directory.name}:{h.hexdigest()}"


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _train_fold(
    config: ArtifactConfig,
    data: LabelledSet,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    fold_dir: Path,
    name: str,
    progress: bool,
    start: InitSource | None = None,
) -> dict[str, Any]:
    """Train an ensemble with the artifact's recipe on ``train_rows`` (early stopping on
    ``val_rows``; members fine-tuned from ``start``, else random starts) and write it as an
    artifact to ``fold_dir``; returns its member summaries."""
    targets = np.asarray(data.targets, dtype=np.float64)

    def part(rows: np.ndarray) -> tuple[list, np.ndarray]:
        graphs = [data.items[i] for i in rows]
        y = targets[rows]
        return graphs, y / per_atom_counts(graphs) if config.task.per_atom else y

    (train_graphs, y_train), (val_graphs, y_val) = part(train_rows), part(val_rows)
    task = make_task(
        y_train,
        config.task.target_names,
        config.task.task_type,
        config.task.units,
        config.task.per_atom,
    )
    train_ds = GraphDataset(train_graphs, model_targets(task, y_train))
    val_ds = GraphDataset(val_graphs, model_targets(task, y_val))
    train_cfg = replace(config.train, ensemble_size=config.n_members, resume=False)
    fitted = fit_ensemble(
        lambda m, seed: (
            build_model(config.model, seed)
            if start is None
            else start.member(config.model, m, seed)
        ),
        train_ds,
        val_ds,
        train_cfg,
        fold_dir,
        progress,
        task_type=task.task_type,
    )
    fold_config = replace(config, task=task, train=train_cfg, name=name, augment=None)
    Artifact(fold_dir).save(fold_config, fitted.members)
    return {"members": fitted.summaries}


#: written into a finished fold model's directory: what it was trained on (a kept work
#: directory's fold model is reused when this matches, e.g. after an interrupted run)
FOLD_MARKER = "cv_fold.json"


def _fold_key(
    config: ArtifactConfig,
    data: LabelledSet,
    train_rows: np.ndarray,
    val_rows: np.ndarray,
    held: np.ndarray,
    start: str = "random",
) -> str:
    """A digest of the recipe (``start``: :func:`_start_digest`) and of the fold's training /
    early-stopping / held-out molecules and labels."""
    h = hashlib.sha256()
    recipe: dict[str, Any] = {"model": config.model.to_dict(), "train": config.train.to_dict()}
    if start != "random":  # (random-start keys stay those of the fold models kept before)
        recipe["start"] = start
    h.update(json.dumps(recipe, sort_keys=True).encode())
    h.update(json.dumps(config.featurizer.to_dict(), sort_keys=True).encode())
    assert data.smiles is not None
    for rows in (train_rows, val_rows, held):
        h.update(json.dumps([str(data.smiles[i]) for i in rows]).encode())
        h.update(np.ascontiguousarray(np.asarray(data.targets, dtype=np.float64)[rows]).tobytes())
    return h.hexdigest()


def _reusable(fold_dir: Path, key: str) -> dict[str, Any] | None:
    """The summaries of a finished fold model in ``fold_dir`` trained for ``key``, else None."""
    marker = fold_dir / FOLD_MARKER
    if not (marker.exists() and Artifact(fold_dir).exists()):
        return None
    stored = json.loads(marker.read_text())
    return stored if stored.get("key") == key else None


def out_of_fold(
    config: ArtifactConfig, data: LabelledSet, cv: CrossValidation, fold_domains: bool = False
) -> OutOfFold:
    """Out-of-fold predictions of every valid, labelled molecule of ``data`` by ensembles
    trained with ``config``'s recipe on the other folds (see the module docstring); with
    ``fold_domains``, each fold model gets the applicability domain of its training molecules
    and ``in_domain`` says whether each molecule is in the domain of the model that predicted
    it."""
    start = check_retrainable(config)
    start_key = _start_digest(start)
    if data.smiles is None:
        raise DataError("cross-validated calibration needs the molecules' SMILES (scaffolds)")
    n, n_targets = len(data), len(config.task.target_names)
    targets = np.asarray(data.targets, dtype=np.float64).reshape(n, -1)
    valid = np.array([not isinstance(item, Exception) for item in data.items], dtype=bool)
    rows = np.flatnonzero(valid & np.isfinite(targets).any(axis=1))
    if len(rows) < 2 * cv.folds:
        raise DataError(
            f"{len(rows)} valid, labelled molecules are too few for {cv.folds}-fold "
            "cross-validation"
        )
    fold = np.full(n, -1, dtype=int)
    big_sets: list[int] = []
    if cv.always_train is not None:
        for group in scaffold_groups([data.smiles[i] for i in rows.tolist()]):
            if len(group) > cv.always_train * len(rows):
                fold[rows[group]] = ALWAYS_TRAIN
                big_sets.append(len(group))
    small = rows[fold[rows] != ALWAYS_TRAIN]
    if len(small) < 2 * cv.folds:
        raise DataError(
            f"{len(small)} molecules outside the largest scaffold sets are too few for "
            f"{cv.folds}-fold cross-validation"
        )
    fold[small] = scaffold_folds([data.smiles[i] for i in small], cv.folds, cv.seed)
    mean = np.full((n, n_targets), np.nan)
    std = np.full((n, n_targets), np.nan)
    ok = np.zeros(n, dtype=bool)
    in_domain = np.zeros(n, dtype=bool) if fold_domains else None
    novelty = np.full(n, np.nan) if fold_domains else None
    has_std = config.n_members > 1
    work = Path(cv.work_dir) if cv.work_dir is not None else None
    temp = Path(tempfile.mkdtemp(prefix="molprop-cv-")) if work is None else None
    base = work if work is not None else temp
    assert base is not None
    per_fold = []
    try:
        with _torch_threads(cv.threads):
            for k in range(cv.folds):
                if cv.only_folds is not None and k not in cv.only_folds:
                    continue
                began = time.perf_counter()
                held = np.flatnonzero(fold == k)
                rest = np.flatnonzero((fold != k) & (fold != -1))  # ALWAYS_TRAIN included
                inner_train, inner_val = scaffold_holdout(
                    [data.smiles[i] for i in rest.tolist()], cv.val_fraction, cv.seed + k
                )
                train_rows, val_rows = rest[inner_train], rest[inner_val]
                log.info(
                    "cross-validation fold %d/%d: training %d members on %d molecules "
                    "(early stopping on %d, scaffold hold-out), then predicting the %d held out",
                    k + 1,
                    cv.folds,
                    config.n_members,
                    len(train_rows),
                    len(val_rows),
                    len(held),
                )
                fold_dir = base / f"fold_{k}"
                key = _fold_key(config, data, train_rows, val_rows, held, start_key)
                trained = _reusable(fold_dir, key)
                reused = trained is not None
                if trained is not None:
                    log.info("cross-validation fold %d/%d: reusing %s", k + 1, cv.folds, fold_dir)
                else:
                    if fold_dir.exists():
                        shutil.rmtree(fold_dir)
                    trained = _train_fold(
                        config,
                        data,
                        train_rows,
                        val_rows,
                        fold_dir,
                        f"{config.name or 'model'}.cv{k}",
                        cv.progress,
                        start,
                    )
                    (fold_dir / FOLD_MARKER).write_text(json.dumps({"key": key, **trained}))
                fold_model = Artifact(fold_dir)
                if fold_domains and not fold_model.has_domain():
                    fold_model.add_domain([str(data.smiles[i]) for i in train_rows])
                if cv.only_folds is not None:
                    log.info("cross-validation fold %d/%d: model ready", k + 1, cv.folds)
                    continue
                raw = raw_predictions(Predictor.from_pretrained(fold_dir), subset(data, held))
                mean[held], ok[held] = raw.mean, raw.ok
                if in_domain is not None and novelty is not None:
                    assert raw.in_domain is not None and raw.novelty is not None
                    in_domain[held], novelty[held] = raw.in_domain, raw.novelty
                if raw.std is not None:
                    std[held] = raw.std
                entry: dict[str, Any] = {
                    "fold": k,
                    "n_train": len(train_rows),
                    "n_early_stopping": len(val_rows),
                    "n_held_out": len(held),
                    "seconds": round(time.perf_counter() - began, 1),
                    "reused": reused,
                    "training_seconds": round(sum(m["seconds"] for m in trained["members"]), 1),
                    "best_epochs": [m["best_epoch"] for m in trained["members"]],
                }
                if config.task.task_type == "regression":
                    err = raw.mean - targets[held]
                    entry["rmse_held_out"] = float(np.sqrt(np.nanmean(err[raw.ok] ** 2)))
                per_fold.append(entry)
                log.info(
                    "cross-validation fold %d/%d done in %.0f s%s",
                    k + 1,
                    cv.folds,
                    entry["seconds"],
                    f": held-out RMSE {entry['rmse_held_out']:.4f}"
                    if "rmse_held_out" in entry
                    else "",
                )
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    report = {
        "folds": cv.folds,
        "seed": cv.seed,
        "val_fraction": cv.val_fraction,
        "molecules": int(len(rows)),
        "held_out_molecules": int(len(small)),
        "always_in_training": {"fraction": cv.always_train, "scaffold_set_sizes": big_sets},
        "molecules_per_fold": np.bincount(fold[small], minlength=cv.folds).tolist(),
        "per_fold": per_fold,
    }
    return OutOfFold(mean, std if has_std else None, ok, fold, report, in_domain, novelty)


def fit_cross_validated(
    directory: str | Path,
    data: LabelledSet,
    cv: CrossValidation = CrossValidation(),
    what: str = "train+val",
    difficulty: str = DEFAULT_DIFFICULTY,
) -> tuple[Calibration, Predictor, OutOfFold]:
    """The calibration of the artifact ``directory`` fitted on out-of-fold predictions of
    ``data`` (``what`` names it in ``fitted_on``; ``difficulty``: see
    :func:`~molprop.training.calibration_fit.fit_conformal`), the artifact's predictor, and the
    out-of-fold predictions. Nothing is written."""
    if cv.only_folds is not None:
        raise ConfigError("only_folds trains fold models and fits nothing: use train_folds")
    predictor = Predictor.from_pretrained(directory)
    config = predictor.config
    has_domain = predictor.domain is not None and data.smiles is not None
    oof = out_of_fold(config, data, cv, fold_domains=has_domain)
    in_domain, novelty = oof.in_domain, oof.novelty
    targets = np.asarray(data.targets, dtype=np.float64).reshape(len(data), -1)
    keep = oof.ok & np.isfinite(targets).any(axis=1)
    if not keep.any():
        raise ConfigError("no molecules predicted out of fold to calibrate on")
    calibration = fit_calibration(
        predictor.task_type,
        predictor.target_names,
        targets[keep],
        oof.mean[keep],
        None if oof.std is None else oof.std[keep],
        None if in_domain is None else in_domain[keep],
        fitted_on=cv.describe(what, int(keep.sum()), int((oof.fold == ALWAYS_TRAIN).sum())),
        novelty=None if novelty is None else novelty[keep],
        difficulty=difficulty,
    )
    return calibration, predictor, oof


def train_folds(directory: str | Path, data: LabelledSet, cv: CrossValidation) -> list[int]:
    """Train (or reuse) the fold models ``cv.only_folds`` of the artifact ``directory`` over
    ``data`` in ``cv.work_dir``, fitting nothing; the folds now ready."""
    if cv.only_folds is None or cv.work_dir is None:
        raise ConfigError("train_folds needs the folds to train and a work directory")
    artifact = Artifact(Path(directory))  # its config and domain file: no weights loaded
    out_of_fold(artifact.read_config(), data, cv, fold_domains=artifact.has_domain())
    return sorted(cv.only_folds)


def calibrate_artifact_cv(
    directory: str | Path,
    data: LabelledSet,
    test: LabelledSet | None = None,
    cv: CrossValidation = CrossValidation(),
    what: str = "train+val",
    difficulty: str = DEFAULT_DIFFICULTY,
) -> dict[str, Any]:
    """Fit the artifact's calibration on out-of-fold predictions of ``data`` (never pass the
    test rows here; ``difficulty``: see :func:`fit_cross_validated`), write
    ``calibration.json`` and return the ``"calibration"`` entry of ``metrics.json`` (with
    ``test``: measured there; ``cross_validation``: the folds)."""
    calibration, predictor, oof = fit_cross_validated(directory, data, cv, what, difficulty)
    report = store_calibration(directory, calibration, predictor, test)
    report["cross_validation"] = oof.report
    return report


__all__ = [
    "CV_FOLDS",
    "CrossValidation",
    "OutOfFold",
    "calibrate_artifact_cv",
    "check_retrainable",
    "fit_cross_validated",
    "out_of_fold",
    "train_folds",
]
