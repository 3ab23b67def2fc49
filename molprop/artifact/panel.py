"""Panel definitions: which models answer a molecule's profile together, in which order.

A panel is a small JSON file beside the models of a model directory,
``<model dir>/panels/<name>.json`` (found by name through :mod:`molprop.artifact.resolve`)::

    {"name": "admet",
     "description": "Solubility, lipophilicity, hydration free energy, BBB penetration",
     "models": ["solubility", "lipophilicity", "hydration_free_energy", "bbb_penetration"]}

``name`` is the file's name without ``.json``; ``models`` are model names (looked up like any
model name, no paths), in display order, each once; any number of them. The file names models
only: their targets, units and the rest are read from the models themselves
(:class:`molprop.inference.panel.Panel`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from molprop.artifact.resolve import MODEL_NAME, panel_file, panel_names, resolve_panel
from molprop.errors import ArtifactError

log = logging.getLogger(__name__)

#: the keys a panel file may have (``description`` is optional)
KEYS: tuple[str, ...] = ("name", "description", "models")


@dataclass(frozen=True)
class PanelDefinition:
    """A panel file's content: its ``name``, a one-line ``description`` and the model names
    (``models``) in display order."""

    name: str
    models: tuple[str, ...]
    description: str = ""

    @classmethod
    def from_dict(cls, data: object, source: str | Path = "panel") -> PanelDefinition:
        """Check a panel file's JSON object (``source`` names the file in errors)."""
        if not isinstance(data, dict):
            raise ArtifactError(f"{source}: a panel is a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise ArtifactError(f"{source}: unknown key(s) {unknown}; a panel has {list(KEYS)}")
        name, models = data.get("name"), data.get("models")
        description = data.get("description", "")
        if not isinstance(name, str) or not MODEL_NAME.fullmatch(name):
            raise ArtifactError(
                f"{source}: 'name' must be a name of letters, digits, '_', '.', '-', got {name!r}"
            )
        if not isinstance(description, str):
            raise ArtifactError(f"{source}: 'description' must be text, got {description!r}")
        if not isinstance(models, list) or not models:
            raise ArtifactError(f"{source}: 'models' must be a non-empty list of model names")
        for i, model in enumerate(models):
            if not isinstance(model, str) or not MODEL_NAME.fullmatch(model):
                raise ArtifactError(
                    f"{source}: models[{i}] = {model!r} is not a model name (no paths in a panel)"
                )
        repeated = sorted({m for m in models if models.count(m) > 1})
        if repeated:
            raise ArtifactError(f"{source}: model(s) {repeated} listed more than once")
        return cls(name=name, models=tuple(models), description=description)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, "models": list(self.models)}


def read_panel(path: str | Path) -> PanelDefinition:
    """The panel file at ``path`` (:class:`ArtifactError` naming the file when it cannot be
    read, is not valid JSON, or its ``name`` is not its file name)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"cannot read the panel {path}: {exc}") from exc
    panel = PanelDefinition.from_dict(data, path)
    if panel.name != path.stem:
        raise ArtifactError(
            f"{path}: the panel is named {panel.name!r} but its file {path.name!r}; a panel is "
            f"found by its file name, so name the file {panel.name}.json"
        )
    return panel


def load_panel(name_or_path: str | Path) -> PanelDefinition:
    """A panel by name (``"admet"``, see :func:`~molprop.artifact.resolve.resolve_panel`) or
    from the path of its file."""
    return read_panel(resolve_panel(name_or_path))


def read_panels(directory: str | Path) -> dict[str, PanelDefinition]:
    """name -> panel for every panel file of the model directory ``directory`` (the service's);
    a broken file is logged and skipped so that it does not take the others down."""
    panels: dict[str, PanelDefinition] = {}
    for name in panel_names(Path(directory)):
        try:
            panels[name] = read_panel(panel_file(Path(directory), name))
        except ArtifactError as exc:
            log.error("skipping panel %s: %s", name, exc)
    return panels


__all__ = ["KEYS", "PanelDefinition", "load_panel", "read_panel", "read_panels"]
