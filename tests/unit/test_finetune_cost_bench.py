"""benchmarks/finetune_cost: the pure parts (summaries, run order, stages read from an artifact's
metrics, the verdicts against the targets and the page's table); no timing is asserted here."""

from __future__ import annotations

import cProfile
from pathlib import Path

import pytest

from benchmarks import finetune_cost as fc


def test_spread_is_min_median_max():
    assert fc.spread([3.0, 1.0, 2.0]) == {"n": 3, "min": 1.0, "median": 2.0, "max": 3.0}
    assert fc.spread([4.0, 1.0]) == {"n": 2, "min": 1.0, "median": 2.5, "max": 4.0}
    with pytest.raises(ValueError):
        fc.spread([])


def test_alternating_order_swaps_the_pair_each_repeat():
    assert fc.alternating("a", "b", 3) == ["a", "b", "b", "a", "a", "b"]
    order = fc.alternating("a", "b", 4)
    assert order.count("a") == order.count("b") == 4
    # each tool goes first as often as the other over an even number of repeats
    assert [order[i] for i in range(0, 8, 2)].count("a") == 2


def test_finetune_stages_split_the_process_wall_time():
    metrics = {
        "training": {
            "members": [{"seconds": 100.0, "epochs_run": 40, "best_epoch": 25}],
            "wall_seconds": 130.0,
            "sizes": {"train": 800, "val": 100, "test": 100},
        }
    }
    s = fc.finetune_stages(metrics, process_wall_s=150.0)
    assert s["training_loop_s"] == 100.0
    assert s["rest_of_run_finetune_s"] == 30.0
    assert s["outside_run_finetune_s"] == 20.0
    assert s["epochs_run"] == [40] and s["best_epoch"] == [25]
    assert s["s_per_epoch"] == 2.5
    assert s["split_sizes"]["train"] == 800
    empty = fc.finetune_stages({}, 10.0)
    assert empty["s_per_epoch"] is None and empty["outside_run_finetune_s"] == 10.0


def result(finetune_median: float, molprop_median: float, chemprop_median: float) -> dict:
    def tool(median: float) -> dict:
        rate = 10_000 / median
        return {
            "wall_s": fc.spread([median, median]),
            "molecules_per_s": fc.spread([rate, rate]),
        }

    return {
        "finetune": {"n_molecules": 1000, "wall_s": fc.spread([finetune_median] * 2)},
        "predict": {
            "n_molecules": 10_000,
            "tools": {"molprop": tool(molprop_median), "chemprop": tool(chemprop_median)},
        },
    }


def test_verdicts_meet_and_miss_the_targets():
    met = fc.verdicts(result(250.0, 20.0, 100.0))
    assert met["finetune"]["met"] and met["predict"]["met"]
    assert met["predict"]["ratio_of_medians"] == 5.0
    missed = fc.verdicts(result(420.0, 50.0, 100.0))
    assert not missed["finetune"]["met"] and missed["finetune"]["times_target"] == 1.4
    assert not missed["predict"]["met"] and missed["predict"]["ratio_of_medians"] == 2.0
    assert fc.verdicts(result(300.0, 1.0, 3.0))["finetune"]["met"]  # the bound itself counts
    alone = result(250.0, 20.0, 100.0)
    del alone["predict"]["tools"]["chemprop"]
    assert "predict" not in fc.verdicts(alone)  # no ratio without chemprop


def test_table_states_misses_as_misses():
    text = fc.table(result(420.0, 50.0, 100.0))
    assert "**missed** (1.4× the target)" in text
    assert "| ≥ 3× | 2.0× | **missed** |" in text
    assert "`chemprop predict`, 10,000 SMILES" in text and "100 / 100 mol/s" in text
    assert "**met**" in fc.table(result(200.0, 10.0, 100.0))


def test_top_functions_reads_a_profile(tmp_path: Path):
    dump = tmp_path / "p.prof"
    profiler = cProfile.Profile()
    profiler.runcall(exec, "import json, sys; sorted(range(1000)); json.dumps([1])")
    profiler.dump_stats(str(dump))
    found = fc.top_functions(dump, n=3)
    assert found["total_s"] >= found["imports_s"] >= 0
    rows = found["top_cumulative"]
    assert 1 <= len(rows) <= 3
    assert {"function", "calls", "tottime_s", "cumtime_s"} <= set(rows[0])
    assert rows == sorted(rows, key=lambda r: r["cumtime_s"], reverse=True)
    assert not any("builtins.exec" in r["function"] for r in rows)  # wrappers left out
