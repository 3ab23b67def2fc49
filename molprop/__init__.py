"""molprop: molecular property prediction with Edge/Node Set Attention and transfer learning."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Predictor", "__version__"]


def __getattr__(name: str):
    if name == "Predictor":
        from molprop.inference.predictor import Predictor

        return Predictor
    raise AttributeError(name)
