"""The rank-1 entry of each TDC ADMET-group leaderboard, read from the TDC website's data.

The TDC website (GitHub mims-harvard/tdc2website-flask) keeps its leaderboards in one Python
literal, ``_LEADERBOARDS`` in ``benchmark/leaderboards.py``. Per benchmark: a list whose second
item holds the column names (the last is the metric), the third the order (``"incr"``: lower is
better, else higher), the fourth one entry per submission (model name first, ranked value last),
the fifth the (mean, std) pairs in the same order, and the last the dataset summary (its fifth
field the metric). The website ranks a leaderboard by each entry's last value in that order (a
stable sort); rank 1 is the first entry after it.

    git -C MIRROR show COMMIT:benchmark/leaderboards.py > leaderboards.py
    python -m benchmarks.tdc_leaderboard leaderboards.py --commit COMMIT

writes ``benchmarks/results/tdc_leaderboard.csv`` (provenance and licence beside it in
``tdc_leaderboard_SOURCES.md``). The file is parsed (``ast.literal_eval`` of that one
assignment), never run. Only numbers and model names are kept: facts, cited to the commit.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

import pandas as pd

CSV = Path(__file__).resolve().parent / "results" / "tdc_leaderboard.csv"
SOURCE_REPO = "mims-harvard/tdc2website-flask"
SOURCE_PATH = "benchmark/leaderboards.py"
COLUMNS = ["tdc_name", "metric", "best_model", "best_value", "best_std",
           "source_repo", "source_commit", "source_path"]  # fmt: skip

#: the 22 benchmarks of TDC's ADMET group, in the website's order (``_GROUP_MEMBERSHIP``,
#: ``benchmark/groups.py``, lists the same names)
ADMET_GROUP = (
    "Caco2_Wang", "HIA_Hou", "Pgp_Broccatelli", "Bioavailability_Ma",
    "Lipophilicity_AstraZeneca", "Solubility_AqSolDB", "BBB_Martins", "PPBR_AZ", "VDss_Lombardo",
    "CYP2C9_Veith", "CYP2D6_Veith", "CYP3A4_Veith", "CYP2C9_Substrate_CarbonMangels",
    "CYP2D6_Substrate_CarbonMangels", "CYP3A4_Substrate_CarbonMangels", "Half_Life_Obach",
    "Clearance_Hepatocyte_AZ", "Clearance_Microsome_AZ", "LD50_Zhu", "hERG", "AMES", "DILI",
)  # fmt: skip


def read_leaderboards(text: str) -> dict[str, Any]:
    """The ``_LEADERBOARDS`` literal of a ``leaderboards.py`` (parsed, not executed)."""
    for node in ast.parse(text).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "_LEADERBOARDS"
        ):
            return ast.literal_eval(node.value)
    raise ValueError("no _LEADERBOARDS assignment")


def best(board: list[Any]) -> dict[str, Any]:
    """Rank 1 of one leaderboard: metric, model, mean and std."""
    columns, order, entries, scores, summary = board[1], board[2], board[3], board[4], board[-1]
    metric = str(columns[-1]).strip()
    if str(summary[4]).strip() != metric:
        raise ValueError(f"metric column {metric!r} != dataset summary {summary[4]!r}")
    sign = 1.0 if order == "incr" else -1.0
    first = sorted(range(len(entries)), key=lambda i: sign * float(entries[i][-1]))[0]
    value, std = (float(x) for x in scores[first])
    if value != float(entries[first][-1]):
        raise ValueError(f"{entries[first][0]!r}: ranked value != its (mean, std) pair")
    return {"metric": metric, "best_model": " ".join(str(entries[first][0]).split()),
            "best_value": value, "best_std": std}  # fmt: skip


def table(boards: dict[str, Any], commit: str) -> pd.DataFrame:
    """One row per ADMET-group benchmark, in ``ADMET_GROUP`` order."""
    rows = [
        {
            "tdc_name": name,
            **best(boards[name]),
            "source_repo": SOURCE_REPO,
            "source_commit": commit,
            "source_path": SOURCE_PATH,
        }  # fmt: skip
        for name in ADMET_GROUP
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def load(path: Path = CSV) -> pd.DataFrame:
    """``tdc_leaderboard.csv`` indexed by TDC dataset name."""
    return pd.read_csv(path, dtype={"source_commit": str}).set_index("tdc_name")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("leaderboards", help=f"a copy of {SOURCE_REPO}:{SOURCE_PATH}")
    parser.add_argument("--commit", required=True, help="the commit the copy was taken at")
    parser.add_argument("--out", default=str(CSV))
    args = parser.parse_args(argv)
    boards = read_leaderboards(Path(args.leaderboards).read_text())
    table(boards, args.commit).to_csv(args.out, index=False)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
