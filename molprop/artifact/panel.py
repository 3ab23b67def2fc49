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

A target name is one endpoint of a panel. Where several of its models predict the same target,
the optional ``served_by`` (target -> one of ``models``) names the model that answers it (its
value, spread, interval, percentile, domain and status); the endpoint keeps the column place of
the target's first appearance in model order, and the other models' prediction of it is not
shown. The shipped ``admet`` panel takes ``hydration_free_energy`` from the FreeSolv model of that
name rather than from ``admet_regression``, whose validation part held too few hydration
molecules to calibrate an interval (docs/results/admet.md)::

    {"name": "admet", "models": ["admet_regression", ..., "hydration_free_energy"],
     "served_by": {"hydration_free_energy": "hydration_free_energy"}}
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from molprop.artifact.resolve import MODEL_NAME, panel_file, panel_names, resolve_panel
from molprop.errors import ArtifactError

log = logging.getLogger(__name__)

#: the keys a panel file may have (``description`` and ``served_by`` are optional)
KEYS: tuple[str, ...] = ("name", "description", "models", "served_by")


def endpoint_owners(
    targets: Sequence[tuple[str, Sequence[str]]], served_by: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """The (target, model) pairs of a panel in column order, from each model's targets
    (``targets``: (model, its target names), in panel order): every target where it first
    appears, answered by ``served_by[target]`` where set, else by the model that predicts it.
    A target predicted twice without a ``served_by`` entry is listed twice (the caller refuses
    that)."""
    served_by = served_by or {}
    out: list[tuple[str, str]] = []
    for model, names in targets:
        for target in names:
            owner = served_by.get(target)
            if owner is None:
                out.append((target, model))
            elif all(t != target for t, _ in out):
                out.append((target, owner))
    return out


@dataclass(frozen=True)
class PanelDefinition:
    """A panel file's content: its ``name``, a one-line ``description``, the model names
    (``models``) in display order and ``served_by`` (target -> the model that answers it, for
    targets several of the models predict)."""

    name: str
    models: tuple[str, ...]
    description: str = ""
    served_by: Mapping[str, str] = field(default_factory=dict)

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
        served_by = data.get("served_by", {})
        if not isinstance(served_by, dict):
            raise ArtifactError(f"{source}: 'served_by' must map target names to model names")
        for target, model in served_by.items():
            if not target or model not in models:
                raise ArtifactError(
                    f"{source}: served_by[{target!r}] = {model!r} is not one of the panel's "
                    f"models {models}"
                )
        return cls(
            name=name, models=tuple(models), description=description, served_by=dict(served_by)
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "models": list(self.models),
        }
        if self.served_by:
            out["served_by"] = dict(self.served_by)
        return out


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


__all__ = ["KEYS", "PanelDefinition", "endpoint_owners", "load_panel", "read_panel", "read_panels"]
