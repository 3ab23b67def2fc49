"""The models the service serves: every artifact under the model directory, loaded once."""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from molprop.artifact import Artifact
from molprop.artifact.calibration import ConformalTarget
from molprop.artifact.coverage import MeasuredCoverage
from molprop.artifact.published import PublishedModels
from molprop.artifact.resolve import artifacts_in, resolve_model
from molprop.errors import MolpropError
from molprop.inference import Predictor

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServedModel:
    """A loaded predictor plus what ``/v1/models`` reports about it."""

    name: str
    predictor: Predictor
    task: str
    #: every target the model predicts, in its output order (one for most models)
    targets: tuple[str, ...]
    #: each target's unit ("" where none is recorded), in the same order
    units: tuple[str, ...]
    version: str
    test_metrics: dict[str, float]
    card: str
    #: made by a fine-tune job and stored in the job database (not in the model directory)
    published: bool = False
    #: target -> how its intervals covered the test molecules, by level (metrics.json)
    coverage: dict[str, tuple[MeasuredCoverage, ...]] = dataclasses.field(default_factory=dict)

    @property
    def n_members(self) -> int:
        return len(self.predictor.members)

    @property
    def multitask(self) -> bool:
        """Several targets: ``POST /v1/predict`` answers it as a panel of this one model."""
        return len(self.targets) > 1

    @property
    def target(self) -> str | None:
        """The target of a one-target model; None for a multitask model (see ``targets``)."""
        return None if self.multitask else self.targets[0]

    def coverage_info(self, target: str) -> list[dict[str, object]]:
        """How ``target``'s intervals covered the test molecules, one entry per level
        (:class:`api.schemas.CoverageInfo`; empty where not measured)."""
        return [
            {"level": c.level, "coverage": c.coverage, "n": c.n, "cp_low": c.low,
             "cp_high": c.high, "verdict": c.verdict}
            for c in self.coverage.get(target, ())
        ]  # fmt: skip

    @property
    def unit(self) -> str | None:
        """The unit of a one-target model's target; None for a multitask model."""
        return None if self.multitask else self.units[0]


def _test_metrics(artifact: Artifact) -> dict[str, float]:
    """The ensemble's finite test metrics from ``metrics.json`` (``{}`` if it has none)."""
    ensemble = artifact.read_metrics().get("test", {}).get("ensemble", {})
    return {
        k: float(v) for k, v in ensemble.items() if isinstance(v, (int, float)) and math.isfinite(v)
    }


def _warm(predictor: Predictor) -> None:
    """Build the conformal regressors now (the first one imports crepes and scipy, ~2 s), so
    that the first request with an interval does not pay for it."""
    if predictor.calibration is not None:
        for target in predictor.calibration.targets.values():
            if isinstance(target, ConformalTarget):
                target.regressor()


def load_model(directory: Path) -> ServedModel:
    """Load one artifact directory (raises ``ArtifactError`` if it is not one)."""
    predictor = Predictor.from_pretrained(directory)
    artifact = predictor.artifact
    _warm(predictor)
    config = predictor.config
    targets = tuple(predictor.target_names)
    units = tuple(config.task.units or ())
    units = tuple(str(units[i] or "") if i < len(units) else "" for i in range(len(targets)))
    return ServedModel(
        name=directory.name,
        predictor=predictor,
        task=config.task.task_type,
        targets=targets,
        units=units,
        version=config.version,
        test_metrics=_test_metrics(artifact),
        card=artifact.read_card(),
        coverage=predictor.interval_coverage(),
    )


def load_models(model_dir: Path) -> dict[str, ServedModel]:
    """name -> model for every artifact directory in ``model_dir``
    (:func:`~molprop.artifact.resolve.artifacts_in`); broken ones are logged and skipped so
    that one bad artifact does not take the service down."""
    models: dict[str, ServedModel] = {}
    for directory in artifacts_in(model_dir):
        try:
            model = load_model(directory)
        except MolpropError as exc:  # a broken artifact: its reason names the file
            log.error("skipping model %s: %s", directory.name, exc)
            continue
        except Exception:
            log.exception("could not load model %s", directory)
            continue
        models[model.name] = model
        log.info("loaded model %s (%d members)", model.name, model.n_members)
    return models


def add_job_models(
    models: dict[str, ServedModel], published: PublishedModels, broken: set[str]
) -> list[str]:
    """Load the models fine-tune jobs stored in the job database that ``models`` lacks
    (``published``; found by :func:`~molprop.artifact.resolve.resolve_model`) -> the names
    added; one that fails to load is logged once and remembered in ``broken``. Published
    models no longer in the database (deleted through another process) are dropped from
    ``models``."""
    stored = published.names()
    for name in [n for n, m in models.items() if m.published and n not in stored]:
        models.pop(name, None)
        log.info("no longer serving the deleted model %s", name)
    broken.intersection_update(stored)
    added = []
    for name in stored:
        if name in models or name in broken:
            continue
        try:
            model = load_model(resolve_model(name, published=published))
            models[name] = dataclasses.replace(model, published=True)
        except MolpropError as exc:
            log.error("skipping the fine-tuned model %s: %s", name, exc)
            broken.add(name)
            continue
        except Exception:
            log.exception("could not load the fine-tuned model %s", name)
            broken.add(name)
            continue
        added.append(name)
        log.info("serving the fine-tuned model %s", name)
    return added
