"""The shipped recipes still describe the shipped models: the training settings of each recipe
equal those stored in its ``pretrained/<name>/config.json`` (the recipes are the
CLI's defaults, so a changed default fails here until ``make pretrained`` retrains them), and a
retrain records the model it replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from molprop.models.config import ModelConfig, TrainConfig
from molprop.pretrained_recipes import MODEL, MODEL_3D, PRETRAINED, RECIPES, train_config


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_settings_equal_the_shipped_model(name: str) -> None:
    recipe = RECIPES[name]
    raw = json.loads((Path(PRETRAINED) / name / "config.json").read_text())
    assert train_config(recipe) == TrainConfig.from_dict(raw["train"])
    model = {**MODEL_3D, **recipe.model} if recipe.structures else MODEL
    stored = ModelConfig.from_dict(raw["model"])  # settings at their default are not written
    assert {k: getattr(stored, k) for k in model} == model
    assert raw["task"]["task_type"] == recipe.task_type
    assert raw["featurizer"]["kind"] == recipe.featurizer
    assert raw["featurizer"]["params"] == recipe.featurizer_params
    # the start: the recipe's init is the model the shipped one was fine-tuned from ("" random)
    assert Path(raw.get("extra", {}).get("finetuned_from", "")).name == recipe.init


def test_a_retrain_keeps_the_replaced_models_test_metrics(tmp_path: Path) -> None:
    """``make pretrained`` over an existing model records what it replaced: the old ensemble
    test metrics and the settings that differ go to ``metrics.json["previous"]`` and the
    card's old -> new line; a directory without a model has nothing to record."""
    import shutil

    from molprop.artifact.store import load_config
    from molprop.pretrained_recipes import previous_note, replaced_model

    assert replaced_model(tmp_path / "none") is None
    old = tmp_path / "old"
    shutil.copytree(Path(PRETRAINED) / "solubility", old)
    raw = json.loads((old / "config.json").read_text())
    raw["model"]["dropout"], raw["train"]["patience"] = 0.3, 7
    (old / "config.json").write_text(json.dumps(raw))
    metrics = json.loads((old / "metrics.json").read_text())
    previous = replaced_model(old)
    assert previous is not None
    assert previous["test"] == metrics["test"]["ensemble"]
    config = load_config(Path(PRETRAINED) / "solubility")
    better = {k: v * 0.5 for k, v in previous["test"].items() if isinstance(v, float)}
    note = previous_note(previous, better, config.model, config.train)
    assert "dropout 0.3" in note and "patience 7" in note and "hidden_dim" not in note
    rmse = previous["test"]["rmse"]
    assert f"rmse {rmse:.3f} -> **{rmse * 0.5:.3f}**" in note
    assert "random start" not in note and "validation" not in note


def test_a_retrain_from_another_start_shows_the_validation_decision(tmp_path: Path) -> None:
    """A random-start model replaced by a fine-tune of the foundation model: the card's line
    names both starts and the validation metrics the replacement was decided on, then the
    test metrics."""
    from molprop.artifact.store import load_config
    from molprop.pretrained_recipes import previous_note, replaced_model

    previous = replaced_model(Path(PRETRAINED) / "solubility")
    assert previous is not None
    metrics = json.loads((Path(PRETRAINED) / "solubility" / "metrics.json").read_text())
    assert previous["val"] == metrics["val"]["ensemble"]
    assert previous["init"] == "pretrained/foundation"
    random_start = {**previous, "init": ""}
    config = load_config(Path(PRETRAINED) / "solubility")
    val = {k: v * 0.9 for k, v in previous["val"].items() if isinstance(v, float)}
    test = {k: v * 0.8 for k, v in previous["test"].items() if isinstance(v, float)}
    start = "pretrained/foundation"
    note = previous_note(random_start, test, config.model, config.train, start=start, val=val)
    assert "from `pretrained/foundation` (`--init foundation`" in note
    assert "was a random start with the same settings" in note
    old_val, old_test = previous["val"]["rmse"], previous["test"]["rmse"]
    decided, tested = note.split("Ensemble test metrics")
    assert f"rmse {old_val:.3f} -> **{old_val * 0.9:.3f}**" in decided
    assert f"rmse {old_test:.3f} -> **{old_test * 0.8:.3f}**" in tested
    # the same start: the line of a retrain with other settings, no start named
    same = previous_note(previous, test, config.model, config.train, start=start, val=val)
    assert "random start" not in same and "`molprop train`'s default recipe" in same


def test_a_replaced_model_on_other_data_is_compared_on_held_out_molecules() -> None:
    """A retrain over a model trained on another data file (the ESOL ``solubility`` replaced by
    the AqSolDB one) compares both on molecules neither trained on; a model on the same file,
    or one that names no file, keeps the same-split comparison."""
    from molprop.pretrained_recipes import other_data

    solubility, lipophilicity = RECIPES["solubility"], RECIPES["lipophilicity"]
    assert other_data({"data": "data/moleculenet/delaney_chemprop.csv.gz"}, solubility)
    assert not other_data({"data": "data/admet/solubility_aqsoldb.csv.gz"}, solubility)
    assert not other_data({"data": "data/moleculenet/lipo_chemprop.csv.gz"}, lipophilicity)
    assert not other_data({"data": "<DataFrame>"}, lipophilicity)
    assert not other_data({}, lipophilicity)
