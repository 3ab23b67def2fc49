"""Every public class of ``molprop.nn`` (and the composed model) documents its tensor shapes in a
``Shapes:`` section of its class docstring (house style, as PyTorch Geometric does)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
from torch import nn

import molprop.nn
from molprop.models.model import MolPropModel

#: Public classes with no tensors in or out (plain settings): exempt, with the reason.
NO_TENSORS = {"BlockConfig": "attention-block settings (ints, floats, strings)"}

SHAPES = re.compile(r"^\s*Shapes:.*\(", re.MULTILINE | re.DOTALL)


def public_classes() -> dict[str, type]:
    """Public classes defined in any module of ``molprop.nn`` (found by walking the package,
    so a new module or class is checked without editing this test)."""
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(molprop.nn.__path__):
        module = importlib.import_module(f"molprop.nn.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__ and name[0] != "_":
                found[name] = obj
    return found


def test_the_walk_finds_the_layers() -> None:
    found = public_classes()
    expected = {
        "MAB",
        "PMA",
        "MLP",
        "MultiHeadAttention",
        "SetEncoder",
        "AttentionReadout",
        "PredictionHead",
        "TokenSet",
        "LearnableGaussianBasis",
        "BlockConfig",
    }
    assert expected <= set(found)
    assert set(NO_TENSORS) <= set(found)
    for name in NO_TENSORS:  # an exemption never covers a layer
        assert not issubclass(found[name], nn.Module), name


CHECKED = {**public_classes(), "MolPropModel": MolPropModel}


@pytest.mark.parametrize("name", sorted(set(CHECKED) - set(NO_TENSORS)))
def test_public_class_has_a_shapes_section(name: str) -> None:
    cls = CHECKED[name]
    doc = cls.__doc__ or ""
    assert SHAPES.search(doc), f"{cls.__module__}.{name} docstring lacks a 'Shapes:' section"
