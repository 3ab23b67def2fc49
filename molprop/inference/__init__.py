"""Loading artifacts and predicting with per-row status."""

from molprop.inference.predictor import Predictor, resolve_model

__all__ = ["Predictor", "resolve_model"]
