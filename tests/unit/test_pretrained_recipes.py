"""The shipped recipes still describe the shipped models: the training settings of each recipe
equal those stored in its ``pretrained/<name>/config.json`` (so changed CLI defaults -- dropout,
weight averaging, which parameters AdamW decays -- are pinned in the recipes, not inherited)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from molprop.models.config import TrainConfig
from molprop.pretrained_recipes import MODEL, MODEL_3D, PRETRAINED, RECIPES, train_config


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_settings_equal_the_shipped_model(name: str) -> None:
    recipe = RECIPES[name]
    raw = json.loads((Path(PRETRAINED) / name / "config.json").read_text())
    assert train_config(recipe) == TrainConfig.from_dict(raw["train"])
    model = {**MODEL_3D, **recipe.model} if recipe.structures else MODEL
    assert {k: raw["model"][k] for k in model} == model
    assert raw["task"]["task_type"] == recipe.task_type
    assert raw["featurizer"]["kind"] == recipe.featurizer
    assert raw["featurizer"]["params"] == recipe.featurizer_params
