"""Shipped targets are named for what they are (``logS``, ``logD_7.4``, ``bbb_probability``,
``hydration_free_energy``) with their unit in every output; the former names are still accepted
where a target is named, with a ``FutureWarning``."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from molprop.artifact.calibration import Calibration
from molprop.artifact.store import load_config, read_metrics, rename_targets
from molprop.errors import ConfigError
from molprop.inference import Predictor
from molprop.pretrained_recipes import PRETRAINED

SHIPPED = {
    "solubility": ("logS", "logp", "log10(mol/L)"),
    "lipophilicity": ("logD_7.4", "lipo", "log10 units (logD, octanol/water at pH 7.4)"),
    "hydration_free_energy": ("hydration_free_energy", "freesolv", "kcal/mol"),
    "bbb_penetration": ("bbb_probability", "p_np", "probability"),
}
SMILES = ["CCO", "c1ccccc1O", "C1CC"]


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_outputs_have_plain_names_and_units(name: str) -> None:
    target, former, unit = SHIPPED[name]
    predictor = Predictor.from_pretrained(name)
    assert predictor.target_names == [target]
    assert predictor.config.task.former_names == (former,)
    out = predictor.predict(SMILES)
    assert former not in out.columns
    assert out.columns.get_loc(f"{target}_unit") == out.columns.get_loc(target) + 1
    assert (out[f"{target}_unit"] == unit).all()
    calibration = Calibration.load(predictor.directory)
    assert calibration is not None and set(calibration.targets) == {target}


def test_a_former_name_is_accepted_with_a_warning() -> None:
    task = load_config(Path(PRETRAINED) / "solubility").task
    with pytest.warns(FutureWarning, match="'logp' is now called 'logS'"):
        assert task.resolve_target("logp") == "logS"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert task.resolve_target("logS") == "logS"
    with pytest.raises(ConfigError, match="unknown target 'solubility'.*logS"):
        task.resolve_target("solubility")


def test_explain_by_former_name_equals_explain_by_name() -> None:
    from molprop.inference.explain import explain

    predictor = Predictor.from_pretrained("solubility")
    new = explain(predictor, ["CCO"], n_steps=8, target="logS")[0]
    with pytest.warns(FutureWarning):
        old = explain(predictor, ["CCO"], n_steps=8, target="logp")[0]
    assert old.target == new.target == "logS"
    np.testing.assert_allclose(old.weights, new.weights)


def _keys(value: object) -> set[str]:
    """Every dictionary key anywhere in ``value`` (the free-text descriptions aside)."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_rename_moves_config_calibration_and_metrics_keys_and_keeps_predictions(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "solubility"
    shutil.copytree(Path(PRETRAINED) / "solubility", directory)
    before = Predictor.from_pretrained(directory).predict(SMILES)
    rename_targets(directory, ["log_solubility"])
    predictor = Predictor.from_pretrained(directory)
    after = predictor.predict(SMILES)
    assert predictor.target_names == ["log_solubility"]
    assert predictor.config.task.former_names == ("logS",)
    for suffix in ("", "_std", "_low", "_high"):
        np.testing.assert_allclose(
            after[f"log_solubility{suffix}"], before[f"logS{suffix}"], equal_nan=True
        )
    assert "logS" not in _keys(read_metrics(directory)["calibration"])  # every key renamed
    with pytest.raises(Exception, match="2 new names for 1 targets"):
        rename_targets(directory, ["a", "b"])
