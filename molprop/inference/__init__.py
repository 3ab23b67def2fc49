"""Loading artifacts and predicting with per-row status (never imports training code)."""

from molprop.artifact.resolve import resolve_model
from molprop.chem.draw import molecule_svg
from molprop.inference.panel import Panel
from molprop.inference.predictor import Predictor
from molprop.inference.rows import (
    STATUS_ERROR,
    STATUS_INVALID,
    STATUS_OK,
    STATUS_UNSUPPORTED,
    STATUSES,
    RowPrediction,
    failure_status,
)

__all__ = [
    "Panel",
    "Predictor",
    "RowPrediction",
    "resolve_model",
    "molecule_svg",
    "failure_status",
    "STATUSES",
    "STATUS_OK",
    "STATUS_INVALID",
    "STATUS_ERROR",
    "STATUS_UNSUPPORTED",
]
