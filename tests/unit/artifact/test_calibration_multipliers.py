"""calibration.json stores crepes' per-bin interval multipliers for the levels 0.01..0.99, so that
prediction at those levels needs no crepes import (~1.5 s of scipy.stats and
scikit-learn in every ``molprop predict`` process). The stored numbers must be crepes' own: the
intervals are bit-identical to crepes' ``predict_int`` whether the table is stored or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from molprop.artifact.calibration import STORED_LEVELS, Calibration, ConformalTarget
from molprop.artifact.resolve import shipped_models_dir
from molprop.training.calibration_fit import fit_calibration

SHIPPED_REGRESSION = (
    "solubility",
    "lipophilicity",
    "hydration_free_energy",
    "homo_lumo_gap",
    "homo_lumo_gap_3d",
)


def _queries(n: int = 400, seed: int = 1):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=n),
        rng.uniform(0.01, 0.6, n),
        rng.uniform(size=n) > 0.3,
        rng.uniform(size=n),
    )


def _without_table(target: ConformalTarget) -> ConformalTarget:
    data = target.to_dict()
    del data["multipliers"]
    fresh = ConformalTarget.from_dict(data)
    assert fresh.multipliers is None
    return fresh


@pytest.mark.parametrize("name", SHIPPED_REGRESSION)
def test_shipped_tables_are_crepes_numbers(name: str) -> None:
    """Every shipped calibration stores the table, and it equals crepes recomputed from the
    stored scores; intervals from it equal crepes' at several levels, bit for bit."""
    cal = Calibration.load(shipped_models_dir() / name)
    assert cal is not None
    for target in cal.targets.values():
        assert isinstance(target, ConformalTarget)
        assert target.multipliers is not None, f"{name}: calibration.json has no multipliers"
        assert list(target.multipliers) == list(STORED_LEVELS)
        plain = _without_table(target)
        assert target.multipliers == plain.crepes_multipliers()
        y_hat, std, dom, nov = _queries()
        for level in (0.5, 0.8, 0.9, 0.95):
            a = target.intervals(y_hat, std, dom, level, nov)
            b = plain.intervals(y_hat, std, dom, level, nov)
            assert a[2] == b[2]
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])


def test_table_is_read_and_unstored_levels_use_crepes(tmp_path: Path) -> None:
    """A planted table value moves the intervals of its level only (so the table is what serves
    it); a level off the grid (0.905) is computed by crepes and matches the table-less target."""
    rng = np.random.default_rng(0)
    std = rng.uniform(0.1, 1.0, 300)
    y_hat = rng.normal(size=300)
    y = y_hat + rng.normal(size=300) * std
    cal = fit_calibration("regression", ["t"], y[:, None], y_hat[:, None], std[:, None], None)
    data = json.loads(json.dumps(cal.to_dict()))
    target = ConformalTarget.from_dict(data["targets"]["t"])
    q_y, q_std, _, _ = _queries()
    low, high, keys = target.intervals(q_y, q_std, None, 0.9)
    planted = json.loads(json.dumps(data))
    levels = planted["targets"]["t"]["multipliers"]["levels"]
    for values in planted["targets"]["t"]["multipliers"]["bins"].values():
        values[levels.index(0.9)] *= 2.0
    doubled = ConformalTarget.from_dict(planted["targets"]["t"])
    low2, high2, _ = doubled.intervals(q_y, q_std, None, 0.9)
    np.testing.assert_allclose(high2 - q_y, 2 * (high - q_y))
    a = doubled.intervals(q_y, q_std, None, 0.8)
    b = _without_table(target).intervals(q_y, q_std, None, 0.8)
    np.testing.assert_array_equal(a[1], b[1])
    c = doubled.intervals(q_y, q_std, None, 0.905)
    d = _without_table(target).intervals(q_y, q_std, None, 0.905)
    np.testing.assert_array_equal(c[0], d[0])
    assert c[2] == d[2] and keys


def test_table_for_other_bins_is_ignored(caplog) -> None:
    """A table whose bins are not the calibration's serving bins (hand-edited scores) is not
    trusted: crepes serves, with a warning."""
    cal = Calibration.load(shipped_models_dir() / "solubility")
    (target,) = cal.targets.values()
    data = target.to_dict()
    bins = data["multipliers"]["bins"]
    bins["no_such_bin"] = bins.pop(next(iter(bins)))
    broken = ConformalTarget.from_dict(data)
    y_hat, std, dom, nov = _queries()
    a = broken.intervals(y_hat, std, dom, 0.9, nov)
    b = _without_table(target).intervals(y_hat, std, dom, 0.9, nov)
    np.testing.assert_array_equal(a[1], b[1])
    assert "do not match" in caplog.text


def test_predict_at_stored_level_does_not_import_crepes(tmp_path: Path) -> None:
    """A whole prediction at the default level of a shipped model leaves crepes (and with it
    scipy.stats / scikit-learn) unimported; a level off the grid imports it."""
    code = (
        "import sys\n"
        "from molprop import Predictor\n"
        "m = Predictor.from_pretrained('solubility')\n"
        "df = m.predict(['CCO', 'c1ccccc1O'], interval=float(sys.argv[1]))\n"
        "assert df['logS_low'].notna().all()\n"
        "print('crepes' in sys.modules)\n"
    )
    stored = subprocess.run(
        [sys.executable, "-c", code, "0.9"], capture_output=True, text=True, check=True
    )
    assert stored.stdout.strip().splitlines()[-1] == "False"
    other = subprocess.run(
        [sys.executable, "-c", code, "0.905"], capture_output=True, text=True, check=True
    )
    assert other.stdout.strip().splitlines()[-1] == "True"
