"""Placeholder for the optional ``cuik_molmaker`` C++ featuriser that chemprop 2.3.1 imports eagerly.

The PyPI wheel ``cuik_molmaker_pin`` is built against rdkit 2026.3.6 and pins it, which would
downgrade the rdkit this venv uses (2026.9.1). chemprop only calls cuik_molmaker when run with
``--use-cuikmolmaker-featurization``, which the benchmarks never pass; this module is put on
PYTHONPATH for chemprop subprocesses only, and fails loudly if anything actually uses it.
"""

from __future__ import annotations


def __getattr__(name: str):
    raise ImportError(
        f"cuik_molmaker is not installed (benchmark shim); attribute {name!r} unavailable"
    )
