"""Loading artifacts and predicting with per-row status (never imports training code)."""

from molprop.artifact.resolve import resolve_model
from molprop.inference.predictor import (
    STATUS_ERROR,
    STATUS_INVALID,
    STATUS_OK,
    Predictor,
)

__all__ = ["Predictor", "resolve_model", "STATUS_OK", "STATUS_INVALID", "STATUS_ERROR"]
