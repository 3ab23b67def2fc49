"""The optional parts of molprop (``pip install "molprop[EXTRA]"``) a subcommand may need.

``pip install molprop`` gives predicting, training, fine-tuning, embedding and explaining; a
subcommand that needs more imports it inside its ``run`` and calls :func:`require_extra`
first, so that a missing package stops it with the install line rather than a traceback
(tests/unit/test_packaging.py checks both).
"""

from __future__ import annotations

import importlib

from molprop.errors import ConfigError

#: extra (pyproject.toml ``[project.optional-dependencies]``) -> the modules it provides that
#: molprop imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "service": (
        "fastapi",
        "starlette",
        "uvicorn",
        "pydantic_settings",
        "httpx",
        "multipart",
        "markdown_it",
        "sqlalchemy",
        "alembic",
        "psycopg",
    ),
    "hpopt": ("optuna", "optuna_integration"),
    "onnx": ("onnx", "onnxruntime", "onnxscript"),
    "pyg": ("torch_geometric",),
}


def require_extra(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """``ConfigError`` naming ``pip install "molprop[extra]"`` unless ``modules`` (default: all
    of the extra's) import; ``what`` is the command that needs them (``"molprop hpopt"``)."""
    missing = []
    for name in EXTRAS[extra] if modules is None else modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ConfigError(
            f"{what} needs the {extra!r} extra (missing: {', '.join(missing)}): "
            f'pip install "molprop[{extra}]"'
        )
