"""benchmarks/results/tdc_leaderboard.csv: every TDC ADMET-group benchmark once, in the metric TDC
ranks it by, and every ADMET endpoint mapped to a TDC dataset finds its leaderboard in the
endpoint's own TDC metric; rank 1 is picked as the TDC website ranks."""

from __future__ import annotations

import math
import re

import pytest

from benchmarks.admet_panel import leaderboard_cells
from benchmarks.tdc_leaderboard import ADMET_GROUP, CSV, best, load, read_leaderboards
from molprop.pretrained_admet import endpoint_table

#: the metric of each ADMET-group benchmark (TDC's benchmark-group documentation)
TDC_METRIC = {
    "Caco2_Wang": "MAE", "HIA_Hou": "AUROC", "Pgp_Broccatelli": "AUROC",
    "Bioavailability_Ma": "AUROC", "Lipophilicity_AstraZeneca": "MAE",
    "Solubility_AqSolDB": "MAE", "BBB_Martins": "AUROC", "PPBR_AZ": "MAE",
    "VDss_Lombardo": "Spearman", "CYP2C9_Veith": "AUPRC", "CYP2D6_Veith": "AUPRC",
    "CYP3A4_Veith": "AUPRC", "CYP2C9_Substrate_CarbonMangels": "AUPRC",
    "CYP2D6_Substrate_CarbonMangels": "AUPRC", "CYP3A4_Substrate_CarbonMangels": "AUROC",
    "Half_Life_Obach": "Spearman", "Clearance_Hepatocyte_AZ": "Spearman",
    "Clearance_Microsome_AZ": "Spearman", "LD50_Zhu": "MAE", "hERG": "AUROC", "AMES": "AUROC",
    "DILI": "AUROC",
}  # fmt: skip

#: our endpoints whose ADMET-AI row is a TDC ADMET-group dataset
MAPPED = {
    "solubility_aqsoldb": "Solubility_AqSolDB",
    "lipophilicity_az": "Lipophilicity_AstraZeneca",
    "bbb_b3db": "BBB_Martins",
    "ppb_pharmabench": "PPBR_AZ",
    "clearance_hepatocyte_az": "Clearance_Hepatocyte_AZ",
    "ames_pharmabench": "AMES",
    "ld50_zhu": "LD50_Zhu",
}


def test_the_csv_has_every_admet_group_benchmark_once_in_its_tdc_metric() -> None:
    board = load()
    assert sorted(board.index) == sorted(ADMET_GROUP) == sorted(TDC_METRIC)
    assert board.index.is_unique
    assert board["metric"].to_dict() == TDC_METRIC
    for name, row in board.iterrows():
        assert row["best_model"].strip(), name
        assert math.isfinite(row["best_value"]) and row["best_std"] >= 0, name
        if row["metric"] in {"AUROC", "AUPRC", "Spearman"}:
            assert -1 <= row["best_value"] <= 1, name
        assert re.fullmatch(r"[0-9a-f]{40}", row["source_commit"]), name
        assert row["source_repo"] and row["source_path"], name
    assert (CSV.parent / "tdc_leaderboard_SOURCES.md").exists()


def test_every_mapped_endpoint_finds_its_leaderboard_in_its_own_tdc_metric() -> None:
    table = endpoint_table()
    board = load()
    mapped = {e: n for e, n in table["admet_ai_id"].dropna().items() if n in board.index}
    assert mapped == MAPPED
    for endpoint, name in mapped.items():
        assert table.loc[endpoint, "tdc_metric"] == board.loc[name, "metric"], endpoint
    cells = leaderboard_cells(list(table.index))
    assert cells["clearance_hepatocyte_az"].startswith("Spearman ")
    assert cells["ld50_zhu"].startswith("MAE ")
    assert cells["bbb_b3db"].startswith("AUROC ")
    unmapped = set(table.index) - set(MAPPED)
    assert unmapped and all(cells[e] == "–" for e in unmapped)


def _board(order: str, metric: str, values: list[tuple[str, float, float]]) -> list:
    entries = [[model, "contact", "link", "paper", "N/A", mean] for model, mean, _ in values]
    scores = [[mean, std] for _, mean, std in values]
    summary = ["TDC.X", "unit", "100", "Regression", metric, "Scaffold"]
    return ["old", ["Rank", "Model", metric], order, entries, scores, ["Dataset"], summary]


def test_rank_one_is_the_lowest_mae_or_the_highest_score_with_its_own_std() -> None:
    rows = [("a", 0.50, 0.01), ("b", 0.40, 0.02), ("c", 0.45, 0.03)]
    assert best(_board("incr", "MAE", rows)) == {
        "metric": "MAE", "best_model": "b", "best_value": 0.40, "best_std": 0.02}  # fmt: skip
    top = best(_board("desc", "AUROC", rows))
    assert (top["best_model"], top["best_value"], top["best_std"]) == ("a", 0.50, 0.01)
    tie = best(_board("desc", "AUROC", [("first", 0.9, 0.1), ("second", 0.9, 0.2)]))
    assert tie["best_model"] == "first"  # a stable sort, as the website's


def test_a_board_whose_numbers_disagree_is_refused() -> None:
    board = _board("incr", "MAE", [("a", 0.5, 0.01)])
    board[4][0][0] = 0.6  # the (mean, std) pair no longer matches the ranked value
    with pytest.raises(ValueError, match="ranked value"):
        best(board)
    board = _board("incr", "MAE", [("a", 0.5, 0.01)])
    board[-1][4] = "Spearman"
    with pytest.raises(ValueError, match="metric"):
        best(board)


def test_the_source_file_is_parsed_not_run() -> None:
    text = "import os\n_LEADERBOARDS = {'X': [1, 2]}\n"
    assert read_leaderboards(text) == {"X": [1, 2]}
    with pytest.raises(ValueError):
        read_leaderboards("_LEADERBOARDS = {'X': os.system('true')}\n")
    with pytest.raises(ValueError, match="no _LEADERBOARDS"):
        read_leaderboards("OTHER = 1\n")
