"""The models shipped with molprop, one artifact directory per model (``solubility/``, ...).

The repository keeps them in the top-level ``pretrained/`` folder; ``pyproject.toml`` installs
that folder as the package ``molprop.pretrained`` (its artifact files as package data), where
:func:`molprop.artifact.resolve.shipped_models_dir` finds them. No code lives here.
"""
