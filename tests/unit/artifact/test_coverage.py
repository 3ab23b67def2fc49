"""The measured coverage of a model's intervals (``molprop.artifact.coverage``): read from the
calibration report of ``metrics.json`` per target and level, with the exact 95 % interval of the
fraction and the verdict the service and the web page show."""

from __future__ import annotations

import pytest

from molprop.artifact.coverage import MeasuredCoverage, clopper_pearson, measured_coverage


def _report(**levels: dict) -> dict:
    return {"calibration": {"test": {"y": {"n": 100, "levels": levels}}}}


def test_levels_are_read_in_order_with_their_clopper_pearson_interval() -> None:
    got = measured_coverage(
        _report(**{"0.95": {"coverage": 0.95, "n": 100}, "0.9": {"coverage": 0.78, "n": 100}})
    )
    assert [c.level for c in got["y"]] == [0.9, 0.95]
    low, high = clopper_pearson(78, 100)
    assert got["y"][0] == MeasuredCoverage(0.9, 0.78, 100, low, high)
    assert high < 0.9 and got["y"][0].verdict == "below"  # 78 of 100 is significantly short
    assert got["y"][1].verdict == "holds"
    assert "100 test molecules" in got["y"][0].describe() and "78.0%" in got["y"][0].describe()


def test_the_verdict_follows_the_interval_not_the_point() -> None:
    # 0.86 of 50 misses 0.9 by 4 points, but its interval still contains 0.9
    assert measured_coverage(_report(**{"0.9": {"coverage": 0.86, "n": 50}}))["y"][0].verdict == (
        "holds"
    )
    over = measured_coverage(_report(**{"0.9": {"coverage": 0.99, "n": 500}}))["y"][0]
    assert over.low > 0.9 and over.verdict == "above"


def test_the_exact_interval_matches_scipys_beta_quantiles_and_its_ends() -> None:
    from scipy.stats import beta

    low, high = clopper_pearson(7, 10)
    assert low == pytest.approx(beta.ppf(0.025, 7, 4)) and high == pytest.approx(
        beta.ppf(0.975, 8, 3)
    )
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0


@pytest.mark.parametrize(
    "metrics",
    [
        {},
        {"calibration": {}},
        {"calibration": {"test": {"p": {"n": 10, "ece": 0.1}}}},  # a classifier's entry
        {"calibration": {"test": {"y": {"levels": {"0.9": {"coverage": 0.9}}}}}},  # no n
        {"calibration": {"test": {"y": {"levels": {"0.9": {"coverage": "x", "n": 5}}}}}},
        {"calibration": {"test": {"y": {"levels": {"1.5": {"coverage": 0.9, "n": 5}}}}}},
        {"calibration": {"test": {"y": {"levels": {"0.9": {"coverage": 0.9, "n": 0}}}}}},
    ],
)
def test_nothing_measured_gives_nothing(metrics: dict) -> None:
    assert measured_coverage(metrics) == {}


def test_a_run_warns_only_for_intervals_significantly_short_at_the_asked_level() -> None:
    from molprop.inference.intervals import coverage_warnings

    coverage = measured_coverage(
        {"calibration": {"test": {
            "short": {"levels": {"0.9": {"coverage": 0.78, "n": 127},
                                 "0.95": {"coverage": 0.94, "n": 127}}},
            "wide": {"levels": {"0.9": {"coverage": 0.99, "n": 500}}},
            "fine": {"levels": {"0.9": {"coverage": 0.89, "n": 100}}},
        }}}
    )  # fmt: skip
    lines = coverage_warnings(coverage, 0.9, "m")
    assert len(lines) == 1 and lines[0].startswith("m short: on its 127 test molecules")
    assert "too narrow" in lines[0]
    assert coverage_warnings(coverage, 0.95, "m") == []  # 0.94 of 127 holds 95 %
    assert coverage_warnings(coverage, 0.8, "m") == []  # not measured at 80 %
    assert coverage_warnings(coverage, None, "m") == []  # no interval asked


def test_the_shipped_panel_warns_for_the_endpoints_its_page_lists_as_missed() -> None:
    """The ``admet`` panel's warnings at 90 % name exactly the endpoints whose measured
    coverage falls significantly short, each from the model that answers it."""
    import json
    from pathlib import Path

    from molprop.inference import Panel

    shipped = Path(__file__).resolve().parents[3] / "pretrained"
    panel = Panel.from_name(str(shipped / "panels" / "admet.json"))
    short = set()
    for endpoint in panel.endpoints:
        metrics = json.loads((shipped / endpoint.model / "metrics.json").read_text())
        for c in measured_coverage(metrics).get(endpoint.target, ()):
            if c.level == 0.9 and c.verdict == "below":
                short.add(f"{endpoint.model} {endpoint.target}")
    lines = panel.coverage_warnings(0.9)
    assert {line.split(":")[0] for line in lines} == short
    assert "admet_regression clearance_microsome_rat" in short  # 78 % of 127
    assert panel.coverage_warnings("none") == []
