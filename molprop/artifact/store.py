"""Model artifacts: a directory with ``config.json`` and one ``model.safetensors`` per member
(the whole layout: :mod:`molprop.artifact.paths`; the handle over it:
:class:`molprop.artifact.Artifact`).

Loading reads JSON and safetensors only: nothing is ever unpickled. Every file is named through
:func:`molprop.artifact.paths.artifact_file` (nothing outside the directory is read, links
included), and each member's tensor names and shapes are read from its safetensors header and
compared with the model the config describes before that model is built, so a config whose
sizes disagree with its weights is refused without allocating them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from molprop.artifact.calibration import Calibration
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.paths import (
    CONFIG_NAME,
    METRICS_NAME,
    WEIGHTS_NAME,
    artifact_file,
    member_name,
)
from molprop.errors import ArtifactError, ConfigError
from molprop.models.model import MolPropModel


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically (a temporary file in the same
    folder, then renamed over it), so that a process reading the file at the same time sees
    the old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def member_path(directory: Path, i: int) -> Path:
    return Path(directory) / member_name(i)


def save_artifact(
    directory: str | Path, config: ArtifactConfig, members: Sequence[MolPropModel]
) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if len(members) != config.n_members:
        raise ArtifactError(f"config says {config.n_members} members, got {len(members)}")
    write_config(directory, config)
    for i, model in enumerate(members):
        path = member_path(directory, i)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(path), metadata={"format": "pt", "member": str(i)})
    return directory


def load_config(directory: str | Path) -> ArtifactConfig:
    """``config.json`` of the artifact ``directory``, validated (``ConfigError`` naming the file
    for a value out of range or unknown, ``ArtifactError`` for a file that is missing, leads
    outside the directory or is not a config)."""
    path = artifact_file(directory, CONFIG_NAME)
    if not path.exists():
        raise ArtifactError(f"no {CONFIG_NAME} in {directory}: not a molprop artifact")
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return ArtifactConfig.from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ArtifactError(f"corrupt {path}: {exc!r}") from exc


def write_config(directory: str | Path, config: ArtifactConfig) -> Path:
    """Write ``config`` as the ``config.json`` of the artifact ``directory``."""
    return write_json(Path(directory) / CONFIG_NAME, config.to_dict())


def update_provenance(directory: str | Path, **changes: Any) -> ArtifactConfig:
    """Set these :class:`~molprop.artifact.config.Provenance` fields (``data``,
    ``finetuned_from``, ...) in the artifact's ``config.json``; the rest of the file is kept as
    it is, byte for byte (a field set to ``""`` or None is removed, as ``Provenance`` writes
    it). Returns the new config."""
    config = load_config(directory)
    provenance = replace(config.provenance, **changes)
    path = artifact_file(directory, CONFIG_NAME)
    data = json.loads(path.read_text())
    before = json.dumps(data)
    extra = data.setdefault("extra", {})
    for key in changes:
        value = getattr(provenance, key)
        if value in ("", None):
            extra.pop(key, None)
        else:
            extra[key] = value
    if json.dumps(data) != before:  # rewritten only when a field changes
        write_json(path, data)
    return replace(config, provenance=provenance)


def next_version(version: str) -> str:
    """The version after ``version``: ``"1"`` -> ``"2"``; not an integer: ``"<v>.1"``."""
    try:
        return str(int(version) + 1)
    except ValueError:
        return f"{version}.1"


def set_version(directory: str | Path, version: str) -> None:
    """Rewrite the artifact's ``config.json`` with ``version`` (nothing else changes)."""
    write_config(directory, replace(load_config(directory), version=version))


def rename_targets(directory: str | Path, names: Sequence[str]) -> ArtifactConfig:
    """Give the model's targets new ``names`` (same order): the config (the old names kept as
    ``former_names``, still accepted for a deprecation period), the calibration's per-target
    entries and the per-target keys of ``metrics.json``. Weights do not change."""
    directory = Path(directory)
    config = load_config(directory)
    old = config.task.target_names
    if len(names) != len(old):
        raise ArtifactError(f"{len(names)} new names for {len(old)} targets of {directory}")
    if tuple(names) == old:
        return config
    mapping = dict(zip(old, names))
    task = replace(config.task, target_names=tuple(names), former_names=old)
    config = replace(config, task=task)
    write_config(directory, config)
    calibration = Calibration.load(directory)
    if calibration is not None:
        targets = {mapping.get(k, k): v for k, v in calibration.targets.items()}
        replace(calibration, targets=targets).save(directory)
    if (directory / METRICS_NAME).exists():
        write_metrics(directory, _renamed_keys(read_metrics(directory), mapping))
    return config


def _renamed_keys(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {mapping.get(k, k): _renamed_keys(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed_keys(v, mapping) for v in value]
    return value


def write_metrics(directory: str | Path, metrics: dict[str, Any]) -> Path:
    """Write ``metrics.json`` (``{"train"|"val"|"test": {"ensemble": ..., "members": [...]},
    "training": {...}}``) into the artifact ``directory``."""
    return write_json(Path(directory) / METRICS_NAME, metrics)


def read_metrics(directory: str | Path) -> dict[str, Any]:
    """``metrics.json`` of an artifact; ``{}`` if it has none (raises ``ArtifactError`` if it is
    not a JSON object)."""
    path = artifact_file(directory, METRICS_NAME)
    if not path.exists():
        return {}
    try:
        metrics = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"corrupt {path}: {exc}") from exc
    if not isinstance(metrics, dict):
        raise ArtifactError(f"corrupt {path}: not a JSON object")
    return metrics


def load_state_strict(model: torch.nn.Module, state: dict[str, torch.Tensor], origin: str) -> None:
    """Load ``state`` requiring exactly the model's keys and shapes (errors name the keys)."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shape = sorted(k for k in set(own) & set(state) if own[k].shape != state[k].shape)
    if missing or unexpected or shape:
        raise ArtifactError(
            f"weights in {origin} do not match the model: missing keys {missing}, "
            f"unexpected keys {unexpected}, shape mismatch {shape}"
        )
    model.load_state_dict(state, strict=True)


def expected_shapes(config: ArtifactConfig) -> dict[str, tuple[int, ...]]:
    """name -> shape of every tensor a member of ``config`` has, from a model built on the
    ``meta`` device (no memory allocated, whatever the sizes)."""
    with torch.device("meta"):
        model = MolPropModel.from_config(config.model)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def stored_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """name -> shape of every tensor in the safetensors file ``path``, read from its header
    only (``ArtifactError`` for a file that is not safetensors)."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {k: tuple(handle.get_slice(k).get_shape()) for k in handle.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise ArtifactError(f"corrupt weights {path}: {exc}") from exc


def check_shapes(
    path: Path, expected: dict[str, tuple[int, ...]], stored: dict[str, tuple[int, ...]]
) -> None:
    """``ArtifactError`` naming ``path`` and the first differences unless the weight file holds
    exactly the tensors (names and shapes) the config implies."""
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    shape = [
        f"{k}: file {list(stored[k])}, config {list(expected[k])}"
        for k in sorted(set(expected) & set(stored))
        if stored[k] != expected[k]
    ]
    problems = [
        f"{what} {items[:5]}" + (f" and {len(items) - 5} more" if len(items) > 5 else "")
        for what, items in (
            ("missing keys", missing),
            ("unexpected keys", unexpected),
            ("shape mismatch", shape),
        )
        if items
    ]
    if problems:
        raise ArtifactError(
            f"weights in {path} do not match the sizes config.json gives: " + "; ".join(problems)
        )


def load_member_weights(directory: str | Path, i: int) -> dict[str, torch.Tensor]:
    """Member ``i``'s tensors as stored (name -> tensor), for a new model to start from; the
    caller checks them against its own model (``ArtifactError`` for a missing or corrupt
    file)."""
    path = artifact_file(directory, member_name(i))
    if not path.is_file():
        raise ArtifactError(f"missing weights {path}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ArtifactError(f"corrupt weights {path}: {exc}") from exc


def load_members(directory: str | Path, config: ArtifactConfig | None = None) -> list[MolPropModel]:
    """The ensemble members, each checked against the config before anything is allocated:
    the tensor names and shapes in its weight file's header must be those of the model the
    config describes (a config whose sizes disagree with the weights is refused with the
    differences, not built)."""
    directory = Path(directory)
    config = config or load_config(directory)
    expected = expected_shapes(config)
    members = []
    for i in range(config.n_members):
        path = artifact_file(directory, member_name(i))
        if not path.is_file():
            raise ArtifactError(f"missing weights {path}")
        check_shapes(path, expected, stored_shapes(path))
        model = MolPropModel.from_config(config.model)
        try:
            state = load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise ArtifactError(f"corrupt weights {path}: {exc}") from exc
        load_state_strict(model, state, str(path))
        model.eval()
        members.append(model)
    return members


__all__ = [
    "CONFIG_NAME",
    "METRICS_NAME",
    "WEIGHTS_NAME",
    "check_shapes",
    "expected_shapes",
    "load_config",
    "load_members",
    "load_member_weights",
    "load_state_strict",
    "member_name",
    "member_path",
    "next_version",
    "read_metrics",
    "rename_targets",
    "save_artifact",
    "set_version",
    "stored_shapes",
    "update_provenance",
    "write_config",
    "write_metrics",
]
