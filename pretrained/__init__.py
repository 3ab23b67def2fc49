"""The models shipped with molprop, one artifact directory per model (``solubility/``, ...),
and the panels that answer several of them together (``panels/admet.json``, see
:mod:`molprop.artifact.panel`).

The repository keeps them in the top-level ``pretrained/`` folder; ``pyproject.toml`` installs
that folder as the package ``molprop.pretrained`` (its artifact files as package data), where
:func:`molprop.artifact.resolve.shipped_models_dir` finds them. No code lives here.
"""
