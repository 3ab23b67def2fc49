"""What a job is asked to do: one typed options record per job kind, the one home of its
defaults.

The service builds the record from the validated request (:mod:`api.jobs`),
:func:`~molprop.jobstore.store.create_job` stores it as JSON in ``jobs.options``
(:meth:`to_json`), and :func:`options_from_json` validates the stored JSON back into the
kind's record, the :attr:`~molprop.jobstore.store.JobRecord.options` that the service and the
workers (:mod:`molprop.jobs`) read. Choices are ``Literal`` types, checked when a record is
made, so a value that is not one of them never reaches the worker.
"""

from __future__ import annotations

import json
import types
from dataclasses import MISSING, asdict, dataclass, fields
from typing import (
    Any,
    ClassVar,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from molprop.errors import ConfigError

_O = TypeVar("_O", bound="_Options")

#: the kinds of job (one options record each, :data:`OPTIONS`)
JobKind = Literal["predict", "finetune"]
#: the task types a fine-tune job trains (those of :data:`molprop.nn.heads.TaskType`, which
#: the service does not import: it is model code)
TaskType = Literal["regression", "classification"]


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the (simple) type ``hint``: a Literal, a union, str, int,
    float (an int too), bool or None."""
    origin = get_origin(hint)
    if origin is Literal:
        return value in get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(value, bool) and hint is not bool:
        return False
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(value, hint)


@dataclass(frozen=True)
class _Options:
    """Type checks and JSON of an options record."""

    kind: ClassVar[JobKind]

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            if not _fits(value, hints[f.name]):
                raise ConfigError(
                    f"{self.kind} job option {f.name!r} must be {_describe(hints[f.name])}, "
                    f"got {value!r}"
                )

    def to_json(self) -> str:
        """The record as the ``jobs.options`` column holds it."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls: type[_O], text: str) -> _O:
        """The record ``jobs.options`` holds (missing options take their defaults);
        :class:`ConfigError` for an unknown option, a missing required one or a value of the
        wrong type."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.kind} job options must be a JSON object, got {text[:80]!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"unknown {cls.kind} job option(s) {unknown}; options: {known}")
        required = [f.name for f in fields(cls) if f.default is MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise ConfigError(f"{cls.kind} job option(s) {missing} missing")
        return cls(**data)


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in get_args(hint))
    return "None" if hint is type(None) else hint.__name__


@dataclass(frozen=True)
class PredictOptions(_Options):
    """A predict job: ``smiles_column`` the SMILES column of its input (set from the input at
    submission), ``interval`` the level of the calibrated interval columns (None: none),
    ``id_column`` the upload's id column, if one was named (it comes back in the results with
    every other input column)."""

    kind: ClassVar[JobKind] = "predict"

    smiles_column: str = "smiles"
    interval: float | None = None
    id_column: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.interval is not None and not 0.0 < self.interval < 1.0:
            raise ConfigError(
                f"predict job option 'interval' must be in (0, 1), got {self.interval}"
            )


@dataclass(frozen=True)
class FinetuneOptions(_Options):
    """A fine-tune job: the labelled table it stores has the SMILES in ``smiles_column`` and
    the label in ``target_column`` (``unit``, if given, its unit; ``rows`` its number of rows);
    the new model is published as ``name`` unless it does not beat the mean predictor on
    validation and ``force_publish`` is not set. It fine-tunes every weight (strategy
    ``full``) for ``epochs`` epochs with ``molprop finetune``'s other training defaults
    (:func:`molprop.models.config.finetune_train_config`), an ensemble of ``ensemble_size``
    members from ``seed``."""

    kind: ClassVar[JobKind] = "finetune"

    name: str
    target_column: str
    smiles_column: str = "smiles"
    task_type: TaskType = "regression"
    #: ``molprop finetune``'s (models.config.FINETUNE_DEFAULTS, a layer above; a test ties them)
    epochs: int = 30
    unit: str | None = None
    rows: int = 0
    force_publish: bool = False
    ensemble_size: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("epochs", "ensemble_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"finetune job option {name!r} must be at least 1")


JobOptions = PredictOptions | FinetuneOptions
#: each kind's options record
OPTIONS: dict[JobKind, type[PredictOptions] | type[FinetuneOptions]] = {
    "predict": PredictOptions,
    "finetune": FinetuneOptions,
}
KINDS: tuple[JobKind, ...] = get_args(JobKind)


def default(record: type[_Options], name: str) -> Any:
    """The default of option ``name`` of ``record`` (for request schemas that show it)."""
    return next(f.default for f in fields(record) if f.name == name)


def options_from_json(kind: str, text: str) -> JobOptions:
    """The ``jobs.options`` JSON of a job of ``kind`` as its options record
    (:meth:`_Options.from_json`); :class:`ConfigError` for an unknown kind."""
    if kind not in OPTIONS:
        raise ConfigError(f"unknown job kind {kind!r}; kinds: {list(KINDS)}")
    return OPTIONS[kind].from_json(text)


__all__ = [
    "KINDS",
    "OPTIONS",
    "FinetuneOptions",
    "JobKind",
    "JobOptions",
    "PredictOptions",
    "TaskType",
    "default",
    "options_from_json",
]
