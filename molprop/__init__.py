"""molprop: molecular property prediction with Edge/Node Set Attention and transfer learning."""

from __future__ import annotations

import os

# Idle OpenMP worker threads sleep instead of spin-waiting. With libgomp's default spin-wait,
# torch on 2 threads ran many times slower than on 1 when another process kept a core busy
# (README "Threads"; benchmarks/threads.py). Takes effect only when torch (libgomp) has not
# been loaded yet, i.e. molprop is imported first; a value the user has set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

__all__ = ["Predictor", "__version__"]


def __getattr__(name: str):
    if name == "Predictor":
        from molprop.inference.predictor import Predictor

        return Predictor
    raise AttributeError(name)
