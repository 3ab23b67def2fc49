"""The one way to name a file of a model directory: :func:`artifact_file`.

A model directory may come from anyone (``MOLPROP_MODEL_DIR``, an unpacked download, a
published model), so every reader of its files (``config.json``, weights, ``card.md``,
``calibration.json``, ``domain.safetensors``, ``metrics.json``, ``split.csv``, the ONNX export,
an augmented model's pretrained copy) asks this module for the path: a name, or a symbolic link
on the way, that leads outside the directory (``card.md -> /etc/passwd``) is refused with an
:class:`~molprop.errors.ArtifactError` before anything is read. Links that stay inside the
directory, and a model directory that is itself a link, are fine.
"""

from __future__ import annotations

from pathlib import Path

from molprop.errors import ArtifactError


def artifact_file(directory: str | Path, name: str | Path) -> Path:
    """``directory / name``, after checking that it stays inside ``directory`` once every
    symbolic link is followed (the file need not exist); ``ArtifactError`` naming the file
    and where it leads otherwise."""
    directory = Path(directory)
    path = directory / name
    try:
        root = directory.resolve()
        target = path.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, a name too long
        raise ArtifactError(f"cannot read {path}: {exc}") from exc
    if target != root and not target.is_relative_to(root):
        raise ArtifactError(
            f"{path} leads outside the model directory {directory} (to {target}): model files "
            "must lie inside their directory; refused"
        )
    return path


__all__ = ["artifact_file"]
