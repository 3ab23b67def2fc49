"""The layout of a model directory (its file names) and the one way to name one of its files:
:func:`artifact_file`.

Layout (read and written through :class:`molprop.artifact.Artifact`)::

    DIR/config.json                      ArtifactConfig (model, featuriser, task + scaler, ...)
    DIR/members/<i>/model.safetensors    weights of ensemble member i
    DIR/metrics.json                     metrics of the training run
    DIR/split.csv                        row, smiles, split (train / val / test) of training
    DIR/invalid_rows.csv                 rows of the training table that could not be read
    DIR/calibration.json                 calibrated intervals / probabilities
    DIR/domain.safetensors               applicability domain
    DIR/reference.json                   percentiles among a reference set
    DIR/card.md                          the model card
    DIR/<source>/                        an augmented model's pretrained copy (an artifact)
    DIR/logs/                            training curves (never shipped or read back)

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

CONFIG_NAME = "config.json"
MEMBERS_DIR = "members"
WEIGHTS_NAME = "model.safetensors"
METRICS_NAME = "metrics.json"
SPLIT_NAME = "split.csv"
INVALID_ROWS_NAME = "invalid_rows.csv"
CALIBRATION_NAME = "calibration.json"
DOMAIN_NAME = "domain.safetensors"
REFERENCE_NAME = "reference.json"
CARD_NAME = "card.md"
LOGS_DIR = "logs"
#: every file name of the layout (the architecture test refuses them outside the package)
MODEL_FILES = (
    CONFIG_NAME,
    WEIGHTS_NAME,
    METRICS_NAME,
    SPLIT_NAME,
    INVALID_ROWS_NAME,
    CALIBRATION_NAME,
    DOMAIN_NAME,
    REFERENCE_NAME,
    CARD_NAME,
)


def member_name(i: int) -> str:
    """Member ``i``'s weight file, relative to the artifact directory."""
    return f"{MEMBERS_DIR}/{i}/{WEIGHTS_NAME}"


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


__all__ = [
    "CALIBRATION_NAME",
    "CARD_NAME",
    "CONFIG_NAME",
    "DOMAIN_NAME",
    "INVALID_ROWS_NAME",
    "LOGS_DIR",
    "MEMBERS_DIR",
    "METRICS_NAME",
    "MODEL_FILES",
    "REFERENCE_NAME",
    "SPLIT_NAME",
    "WEIGHTS_NAME",
    "artifact_file",
    "member_name",
]
