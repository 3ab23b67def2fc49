"""``molprop calibrate``: recalibrate an existing model on a labelled table and write a new
version of its artifact (the weights never change).

The calibration is fitted by :mod:`.calibrate` (on the table's predictions) or by
:mod:`.cv_calibrate` (on out-of-fold predictions of the table the model was trained on).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from molprop.artifact import Artifact
from molprop.artifact.calibration import DEFAULT_DIFFICULTY
from molprop.artifact.resolve import MODEL_NAME
from molprop.artifact.store import next_version
from molprop.errors import ConfigError, DataError
from molprop.inference import Predictor
from molprop.training.calibrate import fit_on, measure, summary
from molprop.training.tables import TableSpec, load_table, table_set

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecalibrateResult:
    """What ``molprop calibrate`` did: the artifact written, its new version, the calibration
    entry of its ``metrics.json``, and the table's rows used / rejected."""

    directory: Path
    version: str
    report: dict[str, Any]
    n_rows_used: int
    n_rows_invalid: int


def recalibrate(
    model: str | Path,
    data: str | Path,
    smiles_column: str = "smiles",
    target_columns: Sequence[str] | None = None,
    out: str | Path | None = None,
    test_data: str | Path | None = None,
    cv: Any = None,
    difficulty: str = DEFAULT_DIFFICULTY,
) -> RecalibrateResult:
    """Recalibrate an existing model on a labelled table (e.g. an in-house assay) and write a
    new version of the artifact; the weights are never touched.

    With ``out``: the artifact is copied there (a new or empty directory; the original stays
    as it was) and the copy is recalibrated. Without: ``model`` must be a path (not a name, so
    a shipped model is never changed by accident) and is recalibrated in place; its previous
    ``calibration.json`` is kept as ``calibration.v<old version>.json``. Either way the
    ``version`` in ``config.json`` goes up by one, ``metrics.json`` gets the new
    ``calibration`` entry (measured on ``test_data`` when given: a labelled table not used to
    fit) and the card's calibration section is rewritten. Every valid, labelled row of ``data``
    is used to fit. ``difficulty``: see :func:`~molprop.training.calibration_fit.fit_conformal`
    (cross-validated: each molecule's novelty against its fold model's training molecules).

    ``cv`` (a :class:`molprop.training.cv_calibrate.CrossValidation`): ``data`` is instead the
    table the model was trained on (without its test rows), predicted out of fold by ensembles
    retrained with the model's recipe on scaffold folds of it
    (:func:`molprop.training.cv_calibrate.fit_cross_validated`); the weights still never change.
    """
    src = Artifact.open(model)
    if out is not None:
        if Path(out).resolve() == src.directory.resolve():
            raise ConfigError(
                "--out is the model directory itself; leave --out out to recalibrate in place"
            )
        if Path(out).exists() and any(Path(out).iterdir()):
            raise ConfigError(f"--out {out} exists and is not empty; choose a new directory")
        artifact = src.copy_to(out)
    else:
        if isinstance(model, str) and MODEL_NAME.fullmatch(model):
            raise ConfigError(
                f"{model!r} is a model name ({src.directory}): give --out DIR for the "
                "recalibrated copy, or pass the artifact as a path (e.g. ./my_model) to "
                "recalibrate it in place"
            )
        artifact = src
    dest = artifact.directory
    config = artifact.read_config()
    columns = list(target_columns or config.task.target_names)
    if len(columns) != len(config.task.target_names):
        raise DataError(
            f"model predicts {len(config.task.target_names)} target(s) "
            f"{list(config.task.target_names)}; got label columns {columns}"
        )

    def read(path: str | Path):
        spec = TableSpec(path, smiles_column, columns, config.featurizer, "skip", False)
        table = load_table(spec)
        return table, table_set(table, np.arange(len(table)))

    table, labelled = read(data)
    predictor = Predictor.from_pretrained(dest)
    cv_report = None
    if cv is not None:
        from molprop.training.cv_calibrate import fit_cross_validated

        calibration, _, oof = fit_cross_validated(dest, labelled, cv, Path(data).name, difficulty)
        cv_report = oof.report
    else:
        fitted_on = f"{Path(data).name}, {len(table)} labelled molecules (molprop calibrate)"
        calibration = fit_on(predictor, labelled, fitted_on, difficulty)
    if out is None:
        artifact.archive_calibration(config.version)
    artifact.write_calibration(calibration)
    version = next_version(config.version)
    artifact.set_version(version)
    report = summary(calibration)
    if cv_report is not None:
        report["cross_validation"] = cv_report
    if test_data is not None:
        _, test = read(test_data)
        report["test"] = measure(calibration, Predictor.from_pretrained(dest), test)
        report["test_data"] = str(test_data)
    artifact.update_metrics(calibration=report)
    artifact.refresh_card_calibration()
    log.info("recalibrated %s (version %s): %s", dest, version, calibration.describe())
    return RecalibrateResult(dest, version, report, len(table), len(table.invalid))


__all__ = ["RecalibrateResult", "recalibrate"]
