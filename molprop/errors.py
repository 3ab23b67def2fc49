"""Typed errors raised across molprop.

Every error carries a human-readable message that names the offending row, column or value.
"""

from __future__ import annotations


class MolpropError(Exception):
    """Base class of all molprop errors."""


class InvalidInputError(MolpropError, ValueError):
    """An input (SMILES, structure, file row) cannot be turned into a graph."""


class UnsupportedMoleculeError(InvalidInputError):
    """A valid molecule outside what the model covers: inorganic (no carbon-containing
    fragment), a metal complex or organometallic, or an element the model never saw in
    training (:mod:`molprop.chem.standardize`). Its row's status is ``unsupported``, not
    ``invalid_input``. ``smiles``: the standardised SMILES, where standardisation got that far."""

    def __init__(self, message: str, smiles: str | None = None) -> None:
        super().__init__(message)
        self.smiles = smiles

    def __reduce__(self):  # keeps ``smiles`` when sent back from a featurising process
        return type(self), (str(self), self.smiles)


class ConfigError(MolpropError, ValueError):
    """A configuration value is inconsistent or unsupported."""


class ArtifactError(MolpropError):
    """A model artifact is missing, corrupt, or does not match the code."""


class DataError(MolpropError, ValueError):
    """A data file is malformed (missing column, no valid rows, ...)."""


class PredictionCancelled(BaseException):
    """Prediction stopped because the caller asked (deadline passed, client gone).

    A ``BaseException``, like ``asyncio.CancelledError``: the ``except Exception`` blocks that
    turn a failing row or batch into a per-row error must not swallow it.
    """


class TrainingInterrupted(BaseException):
    """Training was stopped by a signal (SIGTERM, e.g. a scheduler or ``kill``) before it
    finished. No artifact was written; the finished epochs are checkpointed where the run has a
    log directory, so the same command with ``--resume`` continues. A ``BaseException``, like
    ``PredictionCancelled``: no per-member or per-job ``except Exception`` may swallow it. The
    CLI exits with status 143 (128 + SIGTERM), never 0."""


class ExportError(MolpropError):
    """A model cannot be exported (an operation ONNX does not support, a stale export)."""
