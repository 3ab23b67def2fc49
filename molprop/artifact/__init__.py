"""The model artifact: one directory, one format, read and written only here.

:class:`Artifact` is the handle everything else uses: it opens a model by name or path
(:mod:`.resolve`) and reads and writes ``config.json`` (:class:`ArtifactConfig`), the members'
``members/<i>/model.safetensors`` (:mod:`.store`), ``metrics.json``, ``split.csv``
(:mod:`.split`), ``calibration.json`` (:mod:`.calibration`), ``domain.safetensors``
(:mod:`.domain`), ``reference.json`` (:mod:`.reference`), ``card.md`` (:mod:`.card`, rendered
from Jinja2 templates), the pretrained copy of augmented fine-tuned models, and packs the
directory to bytes for the job database (published models: :mod:`.published`). Every file of
a model directory is named through :func:`.paths.artifact_file`, which refuses names and links
leading outside it. Loading reads JSON and safetensors only: nothing is ever unpickled.
"""

from molprop.artifact.card import CardTexts
from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
from molprop.artifact.handle import Artifact
from molprop.artifact.resolve import available_models, model_dirs, resolve_model, shipped_models_dir

__all__ = [
    "Artifact",
    "ArtifactConfig",
    "Augmentation",
    "CardTexts",
    "Provenance",
    "available_models",
    "model_dirs",
    "resolve_model",
    "shipped_models_dir",
]
