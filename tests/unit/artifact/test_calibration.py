"""Calibration stored in the artifact (``calibration.json``): the conformal intervals rebuilt
from the stored numbers, the Mondrian bins and their fallback rule, the level limits, and a
planted mis-scaled ensemble std that breaks naive intervals but not the conformal ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from molprop.artifact.calibration import (
    CALIBRATION_NAME,
    Calibration,
    ConformalTarget,
    PlattTarget,
)
from molprop.artifact.resolve import shipped_models_dir
from molprop.errors import ArtifactError, ConfigError
from molprop.training.calibration_fit import fit_calibration, fit_conformal

Z90 = 1.6448536269514722  # normal quantile of 0.95: naive 90 % interval mean ± Z90 * std


def _synthetic(n: int, seed: int = 0):
    """Heteroscedastic residuals whose scale is the std; 1/4 of the molecules out of domain
    with residuals twice as large."""
    rng = np.random.default_rng(seed)
    std = rng.uniform(0.1, 1.0, n)
    dom = rng.uniform(size=n) > 0.25
    y_hat = rng.normal(size=n)
    y = y_hat + rng.normal(size=n) * std * np.where(dom, 1.0, 2.0)
    return y, y_hat, std, dom


def test_json_round_trip_rebuilds_the_same_intervals(tmp_path: Path) -> None:
    y, y_hat, std, dom = _synthetic(400)
    cal = fit_calibration("regression", ["t"], y[:, None], y_hat[:, None], std[:, None], dom)
    cal.save(tmp_path)
    text = (tmp_path / CALIBRATION_NAME).read_text()
    assert "pickle" not in text and json.loads(text)["format"] == "molprop-calibration"
    back = Calibration.load(tmp_path)
    assert back is not None and back.n == 400
    q, q_hat, q_std, q_dom = _synthetic(300, seed=1)
    for level in (0.5, 0.8, 0.9, 0.95):
        a = cal.targets["t"].intervals(q_hat, q_std, q_dom, level)
        b = back.targets["t"].intervals(q_hat, q_std, q_dom, level)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
        inside = np.mean((q >= a[0]) & (q <= a[1]))
        assert abs(inside - level) < 0.07, (level, inside)


def test_bins_fall_back_to_the_next_bin_with_enough_molecules() -> None:
    y, y_hat, std, dom = _synthetic(120)
    dom[:] = True
    dom[:20] = False  # 20 out-of-domain calibration molecules: fewer than 30
    target = fit_conformal(y, y_hat, std, dom)
    sizes = target.bin_sizes()
    assert sizes["all"] == 120 and sizes["out_of_domain"] == 20 and sizes["in_domain"] == 100
    serving = target.serving_bins()
    assert "out_of_domain" not in serving and "in_domain" in serving
    low_std, high_std = target.std_edges[0] / 2, target.std_edges[-1] * 2
    keys = target.assign(np.array([low_std, low_std, high_std]), np.array([1, 0, -1]), 0.9)
    # in domain: its (domain, tercile) bin; out of domain (20 < 30): the std tercile bin;
    # unknown domain: the std tercile bin
    assert keys[0] == "in_domain/std_t0" and keys[1] == "std_t0" and keys[2] == "std_t2"
    # a level the tercile bin (~40 molecules) cannot serve falls back to the pooled bin
    assert target.assign(np.array([low_std]), np.array([0]), 0.98) == ["all"]
    assert target.max_level() == pytest.approx(120 / 121)
    with pytest.raises(ConfigError, match="highest level"):
        target.intervals(np.zeros(1), np.ones(1), None, 0.995)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        target.intervals(np.zeros(1), np.ones(1), None, 1.0)


def test_too_few_calibration_molecules_are_refused() -> None:
    """A calibration must serve the default 90 % level (>= 10 molecules); below that the
    model stays uncalibrated rather than giving infinite intervals."""
    y, y_hat, std, dom = _synthetic(10)
    assert fit_conformal(y, y_hat, std, dom).max_level() >= 0.9
    with pytest.raises(ConfigError, match="at least 10"):
        fit_conformal(y[:9], y_hat[:9], std[:9], dom[:9])


def test_single_model_is_plain_split_conformal() -> None:
    y, y_hat, _, dom = _synthetic(200)
    target = fit_conformal(y, y_hat, None, dom)
    assert not target.normalized and target.std_edges == ()
    low, high, keys = target.intervals(y_hat[:5], None, dom[:5], 0.9)
    assert set(keys) <= {"in_domain", "out_of_domain", "all"}
    width = dict(zip(keys, high - low))
    assert all(np.isclose(w, width[k]) for k, w in zip(keys, high - low))  # one width per bin
    assert width["out_of_domain"] > width["in_domain"]  # out-of-domain residuals are larger


def test_platt_round_trip_and_corrupt_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.99, 500)
    y = (rng.uniform(size=500) < p).astype(float)
    cal = fit_calibration("classification", ["c"], y[:, None], p[:, None], None, None)
    cal.save(tmp_path)
    back = Calibration.load(tmp_path)
    assert isinstance(back.targets["c"], PlattTarget)
    assert np.array_equal(back.targets["c"].apply(p), cal.targets["c"].apply(p))
    (tmp_path / CALIBRATION_NAME).write_text('{"format": "molprop-calibration", "version": 99}')
    with pytest.raises(ArtifactError, match="corrupt calibration"):
        Calibration.load(tmp_path)
    assert Calibration.load(tmp_path / "nowhere") is None


# ----------------------------------------------- planted mis-scaled std (real data + model)


@pytest.fixture(scope="module")
def lipophilicity_raw():
    """Uncalibrated predictions (mean, std, in_domain) of the shipped lipophilicity model on
    its validation and test splits, with the labels."""
    from molprop.inference import Predictor
    from molprop.pretrained_recipes import RECIPES, split_sets
    from molprop.training.calibrate import raw_predictions

    directory = shipped_models_dir() / "lipophilicity"
    assert RECIPES["lipophilicity"].task_type == "regression"
    val, test = split_sets(RECIPES["lipophilicity"], directory)
    predictor = Predictor.from_pretrained(directory)
    return {
        part: (raw_predictions(predictor, s), s.targets[:, 0])
        for part, s in (("val", val), ("test", test))
    }


@pytest.mark.parametrize("scale", [10.0, 0.1])
def test_planted_misscaled_std_breaks_naive_intervals_not_conformal(lipophilicity_raw, scale):
    """The ensemble std multiplied by 10 (or 0.1) everywhere: the naive interval
    mean ± 1.645 std covers 98 % (or 4 %) of the test split, far from 90 %, while
    conformal intervals fitted on the validation split with the same mis-scaled std still
    cover ~90 % (scaffold split: 87-93 % is asked; we allow ±5 %)."""
    (rv, yv), (rt, yt) = lipophilicity_raw["val"], lipophilicity_raw["test"]
    std_v, std_t = rv.std[:, 0] * scale, rt.std[:, 0] * scale
    naive = np.mean(np.abs(yt - rt.mean[:, 0]) <= Z90 * std_t)
    assert not 0.87 <= naive <= 0.93, naive  # the plant breaks the naive interval
    target = fit_conformal(yv, rv.mean[:, 0], std_v, rv.in_domain)
    low, high, _ = target.intervals(rt.mean[:, 0], std_t, rt.in_domain, 0.9)
    coverage = np.mean((yt >= low) & (yt <= high))
    assert abs(coverage - 0.9) <= 0.05, coverage
    unscaled = fit_conformal(yv, rv.mean[:, 0], rv.std[:, 0], rv.in_domain)
    low1, high1, _ = unscaled.intervals(rt.mean[:, 0], rt.std[:, 0], rt.in_domain, 0.9)
    assert np.allclose(low, low1) and np.allclose(high, high1)  # scale-free, as it should be


def test_old_artifact_without_calibration_predicts_without_interval(tmp_path, caplog) -> None:
    """An artifact written before calibration existed: it loads and predicts, with no interval
    columns and a log line saying it is not calibrated."""
    from molprop.inference import Predictor

    for name, target in (("solubility", "logS"), ("bbb_penetration", "bbb_probability")):
        old = tmp_path / name
        shutil.copytree(shipped_models_dir() / name, old)
        (old / CALIBRATION_NAME).unlink()
        with caplog.at_level("WARNING", logger="molprop.inference.intervals"):
            out = Predictor.from_pretrained(old).predict(["CCO", "c1ccccc1O", "bad"])
        assert not {f"{target}_low", f"{target}_high", f"{target}_uncalibrated"} & set(out)
        assert out["status"].tolist() == ["ok", "ok", "invalid_input"]
        assert np.isfinite(out[target][:2]).all()
        assert any(
            "not calibrated" in r.getMessage() and str(old) in r.getMessage()
            for r in caplog.records
        )
        new = Predictor.from_pretrained(name).predict(["CCO", "c1ccccc1O", "bad"])
        raw = new.get(f"{target}_uncalibrated", new[target])  # same model, same raw values
        assert np.array_equal(raw[:2].to_numpy(), out[target][:2].to_numpy())


def test_a_multitask_target_with_too_few_labels_is_left_uncalibrated_not_the_model() -> None:
    """A multitask model keeps its intervals where a target has enough calibration labels;
    the one that has not is listed with its reason (stored and read back); a one-target model
    or one with no calibratable target still refuses."""

    rng = np.random.default_rng(0)
    n = 200
    y = rng.normal(size=(n, 2))
    y[9:, 1] = np.nan  # 9 labels for the second target
    mean = y + rng.normal(scale=0.3, size=(n, 2))
    mean[:, 1] = np.where(np.isnan(mean[:, 1]), 0.0, mean[:, 1])
    std = np.full((n, 2), 0.3)
    cal = fit_calibration("regression", ["a", "b"], y, mean, std, None)
    assert list(cal.targets) == ["a"] and isinstance(cal.targets["a"], ConformalTarget)
    assert "9 calibration molecules" in cal.not_calibrated["b"]
    again = Calibration.from_dict(cal.to_dict())
    assert again.not_calibrated == cal.not_calibrated and list(again.targets) == ["a"]
    with pytest.raises(ConfigError, match="9 calibration molecules"):
        fit_calibration("regression", ["b"], y[:, 1:], mean[:, 1:], std[:, 1:], None)
    with pytest.raises(ConfigError, match="no target could be calibrated"):
        fit_calibration("regression", ["b", "c"], y[:, [1, 1]], mean[:, [1, 1]], std, None)
