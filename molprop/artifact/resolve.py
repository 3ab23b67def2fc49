"""Model and panel names and paths -> artifact directories and panel files.

A model *name* (``"solubility"``) is looked up, in order, among the models fine-tune jobs
published (when the caller has a job database: :class:`molprop.artifact.published.PublishedModels`),
in the directories the caller serves (``dirs``), in ``$MOLPROP_MODEL_DIR`` (if set) and in the
models shipped with molprop (:func:`shipped_models_dir`); anything else is a path. A *panel*
name (``"admet"``: several models answered together, see :mod:`molprop.artifact.panel`) is
looked up in the same directories, as ``<dir>/panels/<name>.json``; a model of the same name
comes first. This module is the one place that knows where models and panels live (the
service's default too): the CLI, the job worker and the service find models through
:func:`resolve_model`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol

from molprop.artifact.paths import CONFIG_NAME, artifact_file
from molprop.errors import ArtifactError

#: The environment variable naming an extra directory of model artifacts.
MODEL_DIR_ENV = "MOLPROP_MODEL_DIR"
#: The folder of a model directory that holds panel definitions, ``<name>.json`` each.
PANELS_DIR = "panels"
PANEL_SUFFIX = ".json"

#: The model fine-tuning starts from when none is named (``molprop finetune`` without
#: ``--from``, the service's fine-tune jobs without ``model``), when one of that name exists.
FOUNDATION_MODEL = "foundation"

#: A model *name* (looked up only in the model directories); any other string is a path.
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

#: The package holding the shipped models: ``pyproject.toml`` installs the repository's
#: top-level ``pretrained/`` folder as ``molprop.pretrained``, artifact files as package data.
SHIPPED_PACKAGE = "molprop.pretrained"
#: The same folder in a source tree where that package is not importable (``PYTHONPATH=.``, or
#: an editable install made before the folder was mapped to the package).
_SOURCE_TREE_MODELS = Path(__file__).resolve().parents[2] / "pretrained"


def shipped_models_dir() -> Path:
    """The directory of the models shipped with molprop: the package ``molprop.pretrained``
    (installed wheel, editable install), else ``pretrained/`` of the source tree."""
    try:
        shipped = resources.files(SHIPPED_PACKAGE)
    except ModuleNotFoundError:
        return _SOURCE_TREE_MODELS
    if isinstance(shipped, Path):  # a zipped install has no directory to read artifacts from
        return shipped.resolve()
    return _SOURCE_TREE_MODELS


class ModelSource(Protocol):
    """Models found by name outside the model directories: the ones fine-tune jobs stored in
    a job database (:class:`molprop.artifact.published.PublishedModels`)."""

    def find(self, name: str) -> Path | None:
        """The artifact directory of the model ``name``; None when there is no such model."""
        ...


def model_dirs(dirs: Sequence[str | Path] = ()) -> list[Path]:
    """Where model names are looked up, in order: ``dirs`` (the caller's own model
    directories), ``$MOLPROP_MODEL_DIR`` (if set), then :func:`shipped_models_dir`."""
    out = [Path(d) for d in dirs]
    if os.environ.get(MODEL_DIR_ENV):
        out.append(Path(os.environ[MODEL_DIR_ENV]))
    out.append(shipped_models_dir())
    return out


def artifacts_in(directory: str | Path) -> list[Path]:
    """The artifact directories directly inside ``directory`` (each ``<name>/config.json``),
    sorted by name."""
    return sorted(p.parent for p in Path(directory).glob(f"*/{CONFIG_NAME}"))


def available_models(dirs: Sequence[str | Path] = ()) -> list[str]:
    """Names of every model found in :func:`model_dirs`."""
    return sorted({p.name for b in model_dirs(dirs) for p in artifacts_in(b)})


def resolve_model(
    name_or_path: str | Path,
    dirs: Sequence[str | Path] = (),
    published: ModelSource | None = None,
) -> Path:
    """A model name or an artifact directory -> the artifact directory.

    * A ``str`` matching ``^[A-Za-z0-9][A-Za-z0-9_.-]*$`` (no path separator, no leading dot,
      so never ``..``) is a *name*: it is looked up among the ``published`` models (a job
      database's, when given), then only in :func:`model_dirs` (``dirs`` first), never in the
      working directory, so a folder ``./solubility`` does not shadow the shipped model.
    * Anything else — a ``Path`` object, or a string with a separator (``runs/esol``,
      ``./my_model``, an absolute path) — is a *path* to an artifact directory.
    """
    if isinstance(name_or_path, str) and MODEL_NAME.fullmatch(name_or_path):
        name = name_or_path
        found = published.find(name) if published is not None else None
        if found is not None:
            return found
        for base in model_dirs(dirs):
            if (base / name / CONFIG_NAME).is_file():
                return base / name
        hint = ""
        if (Path(name) / CONFIG_NAME).is_file():
            hint = f"; to use the directory {name!r} here, pass it as a path: ./{name}"
        panels = [panel_file(base, name) for base in model_dirs(dirs)]
        found_panel = next((p for p in panels if p.is_file()), None)
        if found_panel is not None:
            hint += (
                f"; {name!r} is a panel (several models answered together), not one model: "
                f"name one of its models here ({', '.join(_panel_models(found_panel))})"
            )
        raise ArtifactError(
            f"no model named {name!r} in {[str(d) for d in model_dirs(dirs)]} "
            f"(models: {available_models(dirs)}){hint}"
        )
    path = Path(name_or_path)
    if (path / CONFIG_NAME).is_file():
        return path
    raise ArtifactError(
        f"no model artifact at {str(path)!r} (no {CONFIG_NAME} there); "
        f"model names (no path separators) are: {available_models(dirs)}"
    )


def _panel_models(path: Path) -> list[str]:
    """The ``models`` a panel file lists (none when it cannot be read: only for a hint)."""
    import json

    try:
        models = json.loads(path.read_text()).get("models", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [str(m) for m in models] if isinstance(models, list) else []


def panel_file(base: Path, name: str) -> Path:
    """Where the panel ``name`` of the model directory ``base`` is (it need not exist); a
    link leading outside ``base`` is refused (:func:`~molprop.artifact.paths.artifact_file`)."""
    return artifact_file(base, Path(PANELS_DIR) / f"{name}{PANEL_SUFFIX}")


def panel_names(base: Path) -> list[str]:
    """Names of the panels defined in the model directory ``base`` (sorted)."""
    found = Path(base).glob(f"{PANELS_DIR}/*{PANEL_SUFFIX}")
    return sorted(p.stem for p in found if p.is_file() and MODEL_NAME.fullmatch(p.stem))


def available_panels() -> list[str]:
    """Names of every panel found in :func:`model_dirs`."""
    return sorted({name for base in model_dirs() for name in panel_names(base)})


def is_panel(name_or_path: str | Path) -> bool:
    """True when ``name_or_path`` names a panel: a panel name (see :func:`resolve_panel`) that
    no model has (a model of that name comes first), or a path to a ``.json`` file."""
    if isinstance(name_or_path, str) and MODEL_NAME.fullmatch(name_or_path):
        if any((base / name_or_path / CONFIG_NAME).is_file() for base in model_dirs()):
            return False
        return any(panel_file(base, name_or_path).is_file() for base in model_dirs())
    path = Path(name_or_path)
    return path.suffix == PANEL_SUFFIX and path.is_file()


def resolve_panel(name_or_path: str | Path) -> Path:
    """A panel name or the path of a panel file -> the panel file.

    * A name (as for models: no path separator) is looked up only in :func:`model_dirs`, as
      ``<dir>/panels/<name>.json``; the first directory that has it wins.
    * Anything else is the path of a panel file.
    """
    if isinstance(name_or_path, str) and MODEL_NAME.fullmatch(name_or_path):
        for base in model_dirs():
            path = panel_file(base, name_or_path)
            if path.is_file():
                return path
        raise ArtifactError(
            f"no panel named {name_or_path!r} in {[str(d) for d in model_dirs()]} "
            f"(panels: {available_panels()}; models: {available_models()})"
        )
    path = Path(name_or_path)
    if path.is_file():
        return path
    raise ArtifactError(
        f"no panel file at {str(path)!r}; panel names (no path separators) are: "
        f"{available_panels()}"
    )


def has_foundation_model() -> bool:
    """True when a model named :data:`FOUNDATION_MODEL` is in :func:`model_dirs`."""
    return any((base / FOUNDATION_MODEL / CONFIG_NAME).is_file() for base in model_dirs())


def resolve_base_model(name_or_path: str | Path | None) -> Path:
    """The artifact fine-tuning starts from: ``name_or_path`` (see :func:`resolve_model`), or
    when None the foundation model (:data:`FOUNDATION_MODEL`); without one, an
    :class:`ArtifactError` that says so."""
    if name_or_path is not None:
        return resolve_model(name_or_path)
    if not has_foundation_model():
        raise ArtifactError(
            f"no starting model given and no foundation model: there is no model named "
            f"{FOUNDATION_MODEL!r} in {[str(d) for d in model_dirs()]}; name one to start from "
            f"(molprop finetune --from NAME_OR_DIR; models: {available_models()})"
        )
    return resolve_model(FOUNDATION_MODEL)
