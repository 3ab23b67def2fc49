"""Panel: several models answer a molecule's whole profile at once, one wide row per input.

A :class:`Panel` composes one :class:`~molprop.inference.Predictor` per model (each unchanged:
its values, spreads, intervals, percentiles and domain are exactly what it predicts alone) and
the RDKit physicochemical block of :mod:`molprop.inference.physchem`. Its models are named by a
panel file (:mod:`molprop.artifact.panel`, ``Panel.from_name("admet")``) or given as a list
(``Panel.from_models(["solubility", "lipophilicity"])``); any number of them, in display order.

:meth:`Panel.predict` -> one row per input, in order, with the columns

* ``smiles``, ``standardized_smiles`` (the molecule the models read), ``status`` and ``error``
  (the row's, see :mod:`molprop.inference.rows`);
* for every endpoint (each target of each model, in panel order; a target that several models
  predict is answered by the one the panel's ``served_by`` names, in the place of its first
  appearance: :func:`molprop.artifact.panel.endpoint_owners`) ``<target>``,
  ``<target>_unit``, ``<target>_std``, ``<target>_low``, ``<target>_high``,
  ``<target>_percentile``, ``<target>_in_domain`` and ``<target>_similarity``: always all eight
  (NaN, or missing for ``_in_domain``, where the model has no ensemble, calibration, reference or
  domain, or the row has no prediction); a model's domain columns are repeated for each of its
  targets;
* the physchem block (:data:`PHYSCHEM_COLUMNS`: ``described_smiles``, properties, rules,
  alerts), unless ``physchem=False``.

Featurisation. Models with the same featuriser share one featurisation: through the union of
their training elements, with a row read again through a model's own checks where it failed or
has an element that model never saw, so every model gets exactly its own graphs and refusals.

Status. Models that screen alike (same featuriser, same training elements) read the same molecule
and fail alike, so a row's ``status`` / ``error`` is every endpoint's. Where the panel's models
screen differently (the shipped ``admet`` panel's models were trained on different elements),
each endpoint also has ``<target>_status`` / ``<target>_error``. Either way a row's ``status`` is ``ok`` when every
model predicted it; when its models failed alike, their status and error; otherwise (one model
failed, another predicted) the first failure's status and an ``error`` naming each failed model
(``solubility: ...``), the other endpoints keeping their values. An endpoint has a value
exactly when its model predicted the row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rdkit import Chem

from molprop.artifact.calibration import DEFAULT_LEVEL
from molprop.artifact.panel import endpoint_owners, load_panel
from molprop.chem.smiles import smiles_length_limit
from molprop.chem.standardize import ORGANIC_ELEMENTS
from molprop.errors import ConfigError, DataError
from molprop.graph import MolGraph
from molprop.inference.intervals import coverage_warnings, interval_level
from molprop.inference.physchem import COLUMNS as _PHYSCHEM_ALL
from molprop.inference.physchem import physchem_frame
from molprop.inference.pipeline import featurize_screened
from molprop.inference.predictor import Backend, Predictor
from molprop.inference.rows import STATUS_OK, join_outputs
from molprop.inference.screen import ScreenedFeaturizer, WorkLimits

log = logging.getLogger(__name__)

#: the columns every row starts with
ROW_COLUMNS: tuple[str, ...] = ("smiles", "standardized_smiles", "status", "error")
#: the suffixes of an endpoint's columns, after ``<target>`` itself
ENDPOINT_SUFFIXES: tuple[str, ...] = (
    "_unit",
    "_std",
    "_low",
    "_high",
    "_percentile",
    "_in_domain",
    "_similarity",
)
#: an endpoint's own status columns (panels whose models screen differently)
STATUS_SUFFIXES: tuple[str, ...] = ("_status", "_error")
#: the physchem block (its own status is the row's: a molecule that cannot be read has none)
PHYSCHEM_COLUMNS: tuple[str, ...] = tuple(c for c in _PHYSCHEM_ALL if c not in ("status", "error"))


@dataclass(frozen=True)
class Endpoint:
    """One predicted quantity of a panel: ``target`` of the model ``model``."""

    target: str
    model: str
    unit: str
    task_type: str


def _featurizer_key(predictor: Predictor) -> str:
    """Predictors with equal keys build the same graph from the same standardised molecule."""
    return json.dumps(predictor.config.featurizer.to_dict(), sort_keys=True, default=str)


def _screening_key(predictor: Predictor) -> tuple[str, frozenset[str] | None]:
    """Predictors with equal keys read the same graph from a SMILES (and fail alike)."""
    return _featurizer_key(predictor), predictor.screened.elements


def _accepted(predictor: Predictor) -> frozenset[str]:
    """The elements ``predictor``'s chemistry checks accept (None there: the organic subset)."""
    elements = predictor.screened.elements
    return ORGANIC_ELEMENTS if elements is None else elements


def _symbols(item: object) -> frozenset[str] | None:
    """The element symbols of the SMILES a graph was read from (a superset of the checked
    molecule's: explicit hydrogens stay atoms in this unsanitised parse), None for a failure."""
    text = getattr(item, "smiles", None) if isinstance(item, MolGraph) else None
    mol = None if text is None else Chem.MolFromSmiles(text, sanitize=False)
    return None if mol is None else frozenset(atom.GetSymbol() for atom in mol.GetAtoms())


def row_status(
    statuses: np.ndarray, errors: np.ndarray, models: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Each row's ``status`` / ``error`` from its models' (``statuses``, ``errors``: (n, m)
    arrays, one column per model of ``models``); see the module docstring."""
    status, error = [], []
    for row_statuses, row_errors in zip(statuses, errors):
        pairs = list(zip(row_statuses, row_errors))
        if all(p == pairs[0] for p in pairs):
            status.append(str(pairs[0][0]))
            error.append(str(pairs[0][1]))
            continue
        failed = [(m, s, e) for m, (s, e) in zip(models, pairs) if s != STATUS_OK]
        status.append(str(failed[0][1]))
        error.append("; ".join(f"{m}: {e}" for m, _, e in failed))
    return status, error


@dataclass(frozen=True)
class Panel:
    """Several loaded models answered together (see the module docstring). ``name``: the
    panel's (empty for a list of models); ``predictors``: one per model, in display order;
    ``physchem``: add the physchem block; ``served_by``: target -> the model (by name) that
    answers a target several of the models predict."""

    name: str
    predictors: tuple[Predictor, ...]
    description: str = ""
    physchem: bool = True
    served_by: Mapping[str, str] = field(default_factory=dict)
    #: the endpoints, in column order (set from ``predictors``)
    endpoints: tuple[Endpoint, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "predictors", tuple(self.predictors))
        if not self.predictors:
            raise ConfigError(f"{self._what} has no models")
        models = self.model_names
        described: dict[tuple[str, str], Endpoint] = {}
        for model, predictor in zip(models, self.predictors):
            if predictor.low_columns:
                raise ConfigError(
                    f"model {model!r} needs measured low-fidelity labels "
                    f"{predictor.low_columns} per row, which a panel does not take"
                )
            task = predictor.config.task
            units = list(task.units)[: len(task.target_names)]
            units += [""] * (len(task.target_names) - len(units))  # none recorded: ""
            for target, unit in zip(task.target_names, units):
                described[(target, model)] = Endpoint(target, model, unit or "", task.task_type)
        for target, model in self.served_by.items():
            if (target, model) not in described:
                raise ConfigError(
                    f"{self._what}: served_by names {model!r} for {target!r}, but "
                    f"{'it does not predict it' if model in models else 'it is no model of it'}"
                )
        owners = endpoint_owners(
            [(m, p.config.task.target_names) for m, p in zip(models, self.predictors)],
            self.served_by,
        )
        endpoints: list[Endpoint] = []
        owner: dict[str, str] = {}
        for target, model in owners:
            if target in owner:
                where = "twice" if owner[target] == model else f"and by {owner[target]!r}"
                raise ConfigError(
                    f"{self._what}: target {target!r} is predicted by {model!r} "
                    f"{where}; target names across a panel's models must be unique (or the "
                    "panel's served_by names the model that answers it)"
                )
            owner[target] = model
            endpoints.append(described[(target, model)])
        idle = [m for m in models if m not in owner.values()]
        if idle:
            raise ConfigError(f"{self._what}: model(s) {idle} answer no endpoint (served_by)")
        object.__setattr__(self, "endpoints", tuple(endpoints))
        columns = self.columns
        clashes = sorted({c for c in columns if columns.count(c) > 1})
        if clashes:
            raise ConfigError(
                f"{self._what}: column(s) {clashes} would appear twice; a target may not "
                f"be named like a row column {list(ROW_COLUMNS)}, a physchem column or another "
                "target's column"
            )

    def coverage_warnings(self, interval: float | str | None) -> list[str]:
        """:func:`~molprop.inference.intervals.coverage_warnings` of every endpoint, each from
        the model that answers it."""
        level = interval_level(interval)
        by_model: dict[str, list[str]] = {}
        for endpoint in self.endpoints:
            by_model.setdefault(endpoint.model, []).append(endpoint.target)
        lines = []
        for model, predictor in zip(self.model_names, self.predictors):
            measured = predictor.interval_coverage()
            served = {t: measured[t] for t in by_model.get(model, []) if t in measured}
            lines += coverage_warnings(served, level, model)
        return lines

    @property
    def _what(self) -> str:
        """The panel in messages: its name, or its models for a list."""
        return f"panel {self.name!r}" if self.name else f"panel of {self.model_names}"

    @classmethod
    def from_name(cls, name_or_path: str, backend: Backend = "torch") -> Panel:
        """The panel ``name_or_path`` (a panel name, looked up like model names, or the path of
        a panel file; see :mod:`molprop.artifact.panel`) with its models loaded."""
        definition = load_panel(name_or_path)
        predictors = tuple(
            Predictor.from_pretrained(model, backend=backend) for model in definition.models
        )
        return cls(
            definition.name, predictors, definition.description, served_by=definition.served_by
        )

    @classmethod
    def from_models(
        cls, models: Sequence[str], name: str = "", backend: Backend = "torch"
    ) -> Panel:
        """A panel of the models ``models`` (names or artifact directories), in that order."""
        predictors = tuple(Predictor.from_pretrained(m, backend=backend) for m in models)
        return cls(name, predictors)

    @property
    def model_names(self) -> list[str]:
        """Each model's name (its artifact directory's), in panel order."""
        return [predictor.directory.name for predictor in self.predictors]

    @property
    def target_names(self) -> list[str]:
        return [endpoint.target for endpoint in self.endpoints]

    @property
    def screens_alike(self) -> bool:
        """True when every model reads the same molecule from a SMILES and refuses the same
        ones (same featuriser, same training elements): one status per row suffices."""
        return len({_screening_key(p) for p in self.predictors}) == 1

    @property
    def columns(self) -> list[str]:
        """The columns of :meth:`predict`'s frame, in order."""
        columns = list(ROW_COLUMNS)
        suffixes = ENDPOINT_SUFFIXES + (() if self.screens_alike else STATUS_SUFFIXES)
        for target in self.target_names:
            columns += [target, *(target + suffix for suffix in suffixes)]
        return columns + (list(PHYSCHEM_COLUMNS) if self.physchem else [])

    def check_interval(self, interval: float | str | None) -> None:
        """``ConfigError`` naming the model when one cannot serve ``interval``."""
        for model, predictor in zip(self.model_names, self.predictors):
            try:
                predictor.interval_level(interval)
            except ConfigError as exc:
                raise ConfigError(f"model {model!r}: {exc}") from None

    def predict(
        self,
        smiles: Sequence[str] | str,
        interval: float | str | None = DEFAULT_LEVEL,
        batch_size: int = 256,
        *,
        max_heavy_atoms: int | None = None,
        max_smiles_length: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        physchem_executor: Executor | None = None,
    ) -> pd.DataFrame:
        """SMILES -> one wide row per input, in order (columns: the module docstring).
        ``interval``, ``batch_size`` and the work limits are each model's, as in
        :meth:`Predictor.predict`; every model is asked the same. ``physchem_executor``: the
        physchem block is computed there (another process) while the models run here; the
        frame is the same."""
        smiles = [smiles] if isinstance(smiles, str) else list(smiles)
        self.check_interval(interval)
        block = None
        if self.physchem and physchem_executor is not None:
            block = physchem_executor.submit(physchem_frame, smiles)
        given = pd.DataFrame({"smiles": smiles})
        outputs = []
        limit = (
            nullcontext() if max_smiles_length is None else smiles_length_limit(max_smiles_length)
        )
        limits = WorkLimits(max_smiles_length, max_heavy_atoms)
        with limit:
            items = self._featurize(smiles, limits, should_stop)
            for predictor, own in zip(self.predictors, items):
                outputs.append(
                    predictor.predict_frame(
                        given,
                        "smiles",
                        batch_size,
                        items=own,
                        interval=interval,
                        should_stop=should_stop,
                    )
                )
        return self._assemble(smiles, outputs, block)

    def _featurize(
        self,
        smiles: list[str],
        limits: WorkLimits,
        should_stop: Callable[[], bool] | None,
    ) -> list[list]:
        """Each model's graphs (or failures) for ``smiles``, exactly as its own
        ``featurize_smiles`` gives them, with one featurisation per featuriser: the models that
        share a featuriser are read through the union of their training elements, and a row is
        read again through a model's own checks only where it failed or has an element that
        model never saw (its refusal is then the model's own)."""
        by_featurizer: dict[str, list[int]] = {}
        for k, predictor in enumerate(self.predictors):
            by_featurizer.setdefault(_featurizer_key(predictor), []).append(k)
        items: list[list] = [[] for _ in self.predictors]
        for indices in by_featurizer.values():
            group = [self.predictors[k] for k in indices]
            if len({p.screened.elements for p in group}) == 1:  # they screen alike
                shared = featurize_screened(group[0].screened, smiles, limits, should_stop)
                for k in indices:
                    items[k] = shared
                continue
            union = frozenset().union(*(_accepted(p) for p in group))
            wide = ScreenedFeaturizer(group[0].screened.featurizer, union)
            shared = featurize_screened(wide, smiles, limits, should_stop)
            symbols = [_symbols(item) for item in shared]
            for k, predictor in zip(indices, group):
                if predictor.screened.elements == union:  # the shared checks were its own
                    items[k] = shared
                    continue
                accepted = _accepted(predictor)
                again = [i for i, s in enumerate(symbols) if s is None or not s <= accepted]
                own = list(shared)
                redone = predictor.featurize_smiles(
                    [smiles[i] for i in again],
                    max_heavy_atoms=limits.max_heavy_atoms,
                    max_smiles_length=limits.max_smiles_length,
                    should_stop=should_stop,
                )
                for i, item in zip(again, redone):
                    own[i] = item
                items[k] = own
        return items

    def predict_frame(
        self,
        frame: pd.DataFrame,
        smiles_column: str,
        interval: float | str | None = DEFAULT_LEVEL,
        batch_size: int = 256,
        *,
        max_heavy_atoms: int | None = None,
        max_smiles_length: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> pd.DataFrame:
        """``frame``'s columns, unchanged, then :meth:`predict`'s for ``frame[smiles_column]``
        (without its ``smiles``); an output column named like an input column is
        ``pred_<name>`` (:func:`~molprop.inference.rows.join_outputs`). The work limits and
        ``should_stop``: as for :meth:`predict`."""
        if smiles_column not in frame.columns:
            raise DataError(
                f"no column {smiles_column!r} in the input (columns: {list(frame.columns)})"
            )
        out = self.predict(
            frame[smiles_column].tolist(),
            interval,
            batch_size,
            max_heavy_atoms=max_heavy_atoms,
            max_smiles_length=max_smiles_length,
            should_stop=should_stop,
        )
        return join_outputs(frame, out.drop(columns="smiles"))

    def _assemble(
        self,
        smiles: list[str],
        outputs: list[pd.DataFrame],
        block: Future[pd.DataFrame] | None = None,
    ) -> pd.DataFrame:
        """The wide frame from each model's :meth:`Predictor.predict_frame` output (and the
        physchem block computed elsewhere, ``block``, where there is one)."""
        n, models = len(smiles), self.model_names
        statuses = np.column_stack([o["status"].to_numpy(dtype=object) for o in outputs])
        errors = np.column_stack([o["error"].to_numpy(dtype=object) for o in outputs])
        status, error = row_status(statuses, errors, models)
        standardized: list[str | None] = [None] * n
        for o in reversed(outputs):  # the first model's, where it has one
            for i, value in enumerate(o["standardized_smiles"].tolist()):
                if isinstance(value, str) and value:
                    standardized[i] = value
        columns: dict[str, object] = {
            "smiles": smiles,
            "standardized_smiles": standardized,
            "status": status,
            "error": error,
        }
        by_model = dict(zip(models, outputs))
        alike = self.screens_alike
        for endpoint in self.endpoints:
            out, target = by_model[endpoint.model], endpoint.target
            columns.update(_endpoint_columns(out, endpoint, n))
            if not alike:
                columns[f"{target}_status"] = out["status"].to_numpy(dtype=object)
                columns[f"{target}_error"] = out["error"].to_numpy(dtype=object)
        wide = pd.DataFrame(columns)
        if self.physchem:
            physchem = _physchem(smiles, block)[list(PHYSCHEM_COLUMNS)]
            wide = pd.concat([wide, physchem.reset_index(drop=True)], axis=1)
        return wide


def _physchem(smiles: list[str], block: Future[pd.DataFrame] | None) -> pd.DataFrame:
    """The physchem frame of ``smiles``: ``block``'s result, or computed here when there is no
    block or its process failed (the rows are never lost to a dead helper process)."""
    if block is not None:
        try:
            return block.result()
        except Exception as exc:  # a killed or broken helper process
            log.warning("physchem process failed (%s); computing the block here", exc)
    return physchem_frame(smiles)


def _endpoint_columns(out: pd.DataFrame, endpoint: Endpoint, n: int) -> dict[str, object]:
    """``endpoint``'s eight columns from its model's output ``out`` (NaN / missing where the
    model has no such column)."""
    target = endpoint.target

    def numbers(column: str) -> np.ndarray:
        if column not in out.columns:
            return np.full(n, np.nan)
        return out[column].to_numpy(dtype=np.float64, na_value=np.nan)

    in_domain = (
        out["in_domain"].astype("boolean").array
        if "in_domain" in out.columns
        else pd.array([pd.NA] * n, dtype="boolean")
    )
    return {
        target: numbers(target),
        f"{target}_unit": [endpoint.unit] * n,
        f"{target}_std": numbers(f"{target}_std"),
        f"{target}_low": numbers(f"{target}_low"),
        f"{target}_high": numbers(f"{target}_high"),
        f"{target}_percentile": numbers(f"{target}_percentile"),
        f"{target}_in_domain": in_domain,
        f"{target}_similarity": numbers("similarity"),
    }


__all__ = [
    "ENDPOINT_SUFFIXES",
    "Endpoint",
    "PHYSCHEM_COLUMNS",
    "Panel",
    "ROW_COLUMNS",
    "STATUS_SUFFIXES",
    "row_status",
]
