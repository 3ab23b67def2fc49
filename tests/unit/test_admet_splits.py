"""The seeded-splits ADMET benchmark: every endpoint of the shipped panel is scored by exactly the
model that serves it, and the scaffold runs are the models serving a small endpoint; the
random-split summary averages seeds in ADMET-AI's metric (MAE lower is better, AUROC higher) and
the tally counts the means; the scaffold summary keeps only small endpoints in their TDC metric;
the results file resumes per (split, seed, model)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import admet_splits as bench
from molprop.pretrained_admet import ADMET, endpoint_table

REPO = Path(__file__).resolve().parents[2]


def record(split: str, seed: int, endpoint: str, metric: str, value: float, model: str = "m"):
    return {
        "split": split,
        "seed": seed,
        "model": model,
        "endpoint": endpoint,
        f"test_{metric.lower()}": value,
        "test_n": 100,
        "train_seconds": 60.0,
    }


def test_every_panel_endpoint_is_scored_once_by_its_serving_model() -> None:
    panel = json.loads((REPO / "pretrained" / "panels" / "admet.json").read_text())
    jobs = bench.jobs(REPO / "pretrained")
    scored = [e for _, endpoints in jobs for e in endpoints]
    assert len(scored) == len(set(scored))
    assert set(scored) == set(endpoint_table().index)
    owner = {e: m for m, endpoints in jobs for e in endpoints}
    for endpoint, model in panel.get("served_by", {}).items():
        assert owner[endpoint] == model


def test_scaffold_runs_are_the_models_that_serve_a_small_endpoint() -> None:
    small = bench.small_endpoints()
    sizes = {n: len(pd.read_csv(ADMET / f"{n}.csv.gz")) for n in endpoint_table().index}
    assert small == {n for n, size in sizes.items() if size < bench.SMALL}
    assert "hydration_free_energy" in small and "tox21_nr_ar" not in small
    every = dict(bench.jobs(REPO / "pretrained"))
    scaffold = dict(bench.jobs(REPO / "pretrained", "scaffold"))
    assert set(scaffold) == {m for m, endpoints in every.items() if small & set(endpoints)}
    assert "admet_tox21" not in scaffold  # no Tox21 assay is small


def test_protocol_summary_direction_mean_and_seed_wins() -> None:
    table = endpoint_table()
    mae = table.index[table["admet_ai_metric"] == "MAE"][0]
    auroc = table.index[table["admet_ai_metric"] == "AUROC"][0]
    mae_ref = float(table.loc[mae, "admet_ai_value"])
    auroc_ref = float(table.loc[auroc, "admet_ai_value"])
    records = [
        record("random", 0, mae, "MAE", mae_ref - 0.1),
        record("random", 1, mae, "MAE", mae_ref + 0.05),  # mean still lower: as good
        record("random", 0, auroc, "AUROC", auroc_ref - 0.02),
        record("random", 1, auroc, "AUROC", auroc_ref - 0.04),
        record("scaffold", 0, auroc, "AUROC", 1.0),  # another split: not in this summary
        # ADMET-AI does not report it: left out of the tally
        record("random", 0, "logd_pharmabench", "MAE", 0.1),
    ]
    rows = {r["endpoint"]: r for r in bench.protocol_summary(records)}
    assert set(rows) == {mae, auroc}
    assert rows[mae]["mean"] == pytest.approx(mae_ref - 0.025)
    assert rows[mae]["as_good"] and rows[mae]["seeds_as_good"] == 1
    assert not rows[auroc]["as_good"] and rows[auroc]["seeds_as_good"] == 0
    assert rows[auroc]["sd"] == pytest.approx(math.sqrt(2) * 0.01)
    text = bench.tally(list(rows.values()))
    first = text.split(". Leaving out")[0]
    assert "1 of 2" in first and "missed" in first and mae in first.split(":")[-1]
    assert "seeds 0, 1" in text


def test_tally_met_at_sixty_percent() -> None:
    rows = [{"endpoint": f"e{i}", "as_good": i < 3, "seeds": [0]} for i in range(5)]
    assert "target ≥ 60 %: met" in bench.tally(rows)


def test_scaffold_summary_small_endpoints_in_their_tdc_metric() -> None:
    records = [
        record("scaffold", 0, "clearance_hepatocyte_az", "Spearman", 0.4),
        record("scaffold", 1, "clearance_hepatocyte_az", "Spearman", 0.6),
        record("scaffold", 0, "clearance_hepatocyte_az", "MAE", 30.0) | {"seed": 2},
        record("scaffold", 0, "ld50_zhu", "MAE", 0.5),  # 7,333 molecules: not small
        record("random", 0, "hydration_free_energy", "MAE", 0.6),  # not a scaffold run
    ]
    rows = bench.scaffold_summary(records)
    assert [r["endpoint"] for r in rows] == ["clearance_hepatocyte_az"]
    (row,) = rows
    assert row["metric"] == "Spearman" and row["seeds"] == [0, 1, 2]
    # the seed without a Spearman value is NaN, left out of mean and range
    assert row["mean"] == pytest.approx(0.5) and (row["min"], row["max"]) == (0.4, 0.6)


def test_results_resume_by_split_seed_and_model(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [
        record("random", 0, "a", "MAE", 1.0, "x"),
        record("random", 0, "b", "MAE", 1.0, "x"),
        record("scaffold", 1, "a", "MAE", 1.0, "y"),
    ]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    assert bench.done(bench.read_records(path)) == {("random", 0, "x"), ("scaffold", 1, "y")}
    assert bench.read_records(tmp_path / "missing.jsonl") == []


def test_page_names_both_parts(tmp_path: Path) -> None:
    table = endpoint_table()
    mae = table.index[table["admet_ai_metric"] == "MAE"][0]
    records = [
        record("random", 0, mae, "MAE", 0.1),
        record("scaffold", 0, "hydration_free_energy", "MAE", 1.1),
        record("scaffold", 1, "hydration_free_energy", "MAE", 0.9),
    ]
    text = bench.write_page(records, tmp_path / "page.md").read_text()
    assert "1 of 1 endpoints both report (100%; target ≥ 60 %: met)" in text
    assert "| hydration_free_energy | m | MAE | 100, 100 | 1.000 ± 0.141 | 0.900–1.100 |" in text


def test_tally_also_counts_the_endpoints_with_tdc_source_data() -> None:
    rows = [
        {"endpoint": "bbb_b3db", "as_good": True, "seeds": [0]},  # B3DB, not TDC's BBB_Martins
        {"endpoint": "clintox", "as_good": False, "seeds": [0]},
        {"endpoint": "ld50_zhu", "as_good": True, "seeds": [0]},
    ]
    text = bench.tally(rows)
    assert "2 of 3 endpoints both report (67%; target ≥ 60 %: met)" in text
    assert "(bbb_b3db (B3DB)): 1 of 2 (50%)" in text
