"""The shipped recipes still describe the shipped models: the training settings of each recipe
equal those stored in its ``pretrained/<name>/config.json`` (so changed CLI defaults -- dropout,
weight averaging, which parameters AdamW decays -- are pinned in the recipes, not inherited)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from molprop.models.config import TrainConfig
from molprop.pretrained_recipes import MODEL, PRETRAINED, RECIPES, train_config


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_settings_equal_the_shipped_model(name: str) -> None:
    raw = json.loads((Path(PRETRAINED) / name / "config.json").read_text())
    assert train_config(RECIPES[name]) == TrainConfig.from_dict(raw["train"])
    assert {k: raw["model"][k] for k in MODEL} == MODEL
    assert raw["task"]["task_type"] == RECIPES[name].task_type
