"""The model artifact: one directory, one format, read and written only here.

``config.json`` (:class:`ArtifactConfig`), ``members/<i>/model.safetensors`` (:mod:`.store`),
``domain.safetensors`` (:mod:`.domain`), ``card.md`` (:mod:`.card`), a pretrained copy for
augmented fine-tuned models (:mod:`.augment`); names resolve through :mod:`.resolve`; every file of a model directory is named through
:func:`.paths.artifact_file`, which refuses names and links leading outside it.
Loading reads JSON and safetensors only: nothing is ever unpickled.
"""

from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
from molprop.artifact.resolve import available_models, model_dirs, resolve_model, shipped_models_dir
from molprop.artifact.store import load_config, load_members, save_artifact

__all__ = [
    "ArtifactConfig",
    "Augmentation",
    "Provenance",
    "available_models",
    "load_config",
    "load_members",
    "model_dirs",
    "resolve_model",
    "save_artifact",
    "shipped_models_dir",
]
