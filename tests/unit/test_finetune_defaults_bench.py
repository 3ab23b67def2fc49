"""benchmarks/finetune_defaults: the selection split (disjoint from what is fine-tuned on, the
MoleculeACE test part never used), the decision rule, the epochs of a staged fine-tune, the
resumable results and the report section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks import finetune_defaults as fd


def _ace_csv(path: Path, n_train: int = 40, n_test: int = 10) -> pd.DataFrame:
    """A MoleculeACE-like CSV: train rows ``C...`` and test rows ``N...`` (told apart by SMILES)."""
    rows = [
        {"smiles": "C" * (i + 1), "y": float(i), "cliff_mol": 0, "split": "train"}
        for i in range(n_train)
    ]
    rows += [
        {"smiles": "N" * (i + 1), "y": 100.0 + i, "cliff_mol": 1, "split": "test"}
        for i in range(n_test)
    ]
    frame = pd.DataFrame(rows)
    frame.insert(1, "exp_mean [nM]", 1.0)
    frame.to_csv(path, index=False)
    return frame


def test_selection_split_is_seeded_disjoint_and_complete():
    train = pd.DataFrame({"smiles": [f"C{i}" for i in range(200)], "y": np.arange(200.0)})
    fit, select = fd.selection_split(train)
    assert len(select) == 30 and len(fit) == 170  # 15 %
    assert set(fit["smiles"]).isdisjoint(select["smiles"])
    assert set(fit["smiles"]) | set(select["smiles"]) == set(train["smiles"])
    again = fd.selection_split(train)[1]
    assert again["smiles"].tolist() == select["smiles"].tolist()  # the same for every candidate
    other = fd.selection_split(train, seed=1)[1]
    assert other["smiles"].tolist() != select["smiles"].tolist()
    assert select["y"].is_monotonic_increasing  # original row order kept
    with pytest.raises(ValueError):
        fd.selection_split(train.head(2))


def test_only_the_training_part_is_fine_tuned_on_or_predicted(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    frame = _ace_csv(data / "SET_Ki.csv")
    train_smiles = set(frame.loc[frame["split"] == "train", "smiles"])
    test_smiles = set(frame.loc[frame["split"] == "test", "smiles"])
    seen: dict[str, list[list[str]]] = {"fit": [], "predicted": []}

    def runner(cmd, log_path, env):
        assert env["OMP_NUM_THREADS"] == "1"
        assert cmd[cmd.index("--split-sizes") + 1 : cmd.index("--split-sizes") + 4] == [
            "0.9",
            "0.1",
            "0",
        ]
        assert "--from" not in cmd and "--no-progress" in cmd
        seen["fit"].append(pd.read_csv(cmd[cmd.index("--data") + 1])["smiles"].tolist())
        out = Path(cmd[cmd.index("--out") + 1])
        out.mkdir(parents=True)
        member = {"best_epoch": 2, "epochs_run": 7}
        (out / "metrics.json").write_text(json.dumps({"training": {"members": [member]}}))
        return type("Proc", (), {"seconds": 12.34, "cpu_seconds": 10.0})()

    def predict(model_dir, select):
        seen["predicted"].append(select["smiles"].tolist())
        return select["y"].to_numpy(dtype=float) + 1.0, []

    monkeypatch.setattr(fd, "molprop_predict", predict)

    def select_run(fit, select, candidate, seed, work):
        return fd.finetune_select(fit, select, candidate, seed, work, runner=runner)

    results = tmp_path / "r.jsonl"
    fd.run(
        data,
        tmp_path / "work",
        fd.jobs(["SET_Ki"], ["default", "patience10"], [0]),
        results,
        select_run,
    )
    assert len(seen["fit"]) == len(seen["predicted"]) == 2
    for fit, predicted in zip(seen["fit"], seen["predicted"], strict=True):
        assert set(fit).isdisjoint(predicted)  # the selection part is never trained on
        assert set(fit) | set(predicted) == train_smiles
        assert test_smiles.isdisjoint(fit) and test_smiles.isdisjoint(predicted)
    assert seen["fit"][0] == seen["fit"][1]  # every candidate sees the same parts
    rows = fd.read_jsonl(results)
    assert [r["candidate"] for r in rows] == ["default", "patience10"]
    assert rows[0]["rmse_select"] == pytest.approx(1.0)
    assert (rows[0]["n_fit"], rows[0]["n_select"]) == (34, 6)
    assert (rows[0]["epochs"], rows[0]["best_epoch_1based"], rows[0]["wall_s"]) == (7, 3, 12.3)
    assert rows[1]["flags"][rows[1]["flags"].index("--patience") + 1] == "10"
    # resumable: a second run does nothing
    fd.run(
        data,
        tmp_path / "work",
        fd.jobs(["SET_Ki"], ["default", "patience10"], [0]),
        results,
        select_run,
    )
    assert len(seen["fit"]) == 2 and len(fd.read_jsonl(results)) == 2


def test_training_part_drops_the_test_rows(tmp_path):
    _ace_csv(tmp_path / "SET_Ki.csv")
    train = fd.training_part(tmp_path, "SET_Ki")
    assert len(train) == 40 and all(s.startswith("C") for s in train["smiles"])


def test_candidates_change_one_setting_each_and_pass_every_one_explicitly():
    base = fd.settings("default")
    assert fd.candidate_flags("default")[:4] == ["--lr", "0.0005", "--patience", "30"]
    for c in fd.CANDIDATES:
        changed = {k for k, v in fd.settings(c).items() if v != base[k]}
        assert changed == set(fd.CANDIDATES[c])
    assert fd.settings("lr_half")["lr"] == pytest.approx(2.5e-4)
    assert fd.settings("lr_double")["lr"] == pytest.approx(1e-3)
    assert fd.candidate_flags("unfreeze5")[-2:] == ["--unfreeze-after", "5"]
    wd = fd.candidate_flags("warmup_decay30")
    assert wd[wd.index("--schedule") + 1] == "warmup_decay" and "--warmup-epochs" in wd


def test_epochs_of_a_staged_fine_tune_count_both_stages(tmp_path):
    member = {"best_epoch": 4, "epochs_run": 20, "stage1": {"best_epoch": 3, "epochs_run": 5}}
    (tmp_path / "metrics.json").write_text(json.dumps({"training": {"members": [member]}}))
    got = fd.epochs_of(tmp_path)
    assert (got["epochs"], got["best_epoch_1based"]) == (25, 10)
    member["best_epoch"] = -1  # stage 2 never beat stage 1's weights
    (tmp_path / "metrics.json").write_text(json.dumps({"training": {"members": [member]}}))
    assert fd.epochs_of(tmp_path)["best_epoch_1based"] == 4


def _records(table: dict[str, dict[str, tuple[float, float]]]) -> list[dict]:
    """candidate -> set -> (rmse, wall) as result records (seed 0)."""
    return [
        {
            "candidate": c,
            "set": s,
            "seed": 0,
            "rmse_select": rmse,
            "wall_s": wall,
            "epochs": 10,
            "best_epoch_1based": 5,
        }
        for c, sets in table.items()
        for s, (rmse, wall) in sets.items()
    ]


def test_decision_lowest_mean_ratio_wins():
    rec = _records(
        {
            "default": {"A": (1.0, 100), "B": (2.0, 100)},
            "lr_half": {"A": (0.9, 100), "B": (2.2, 100)},  # ratios 0.9, 1.1: mean 1.0
            "lr_double": {"A": (0.95, 100), "B": (1.9, 100)},  # 0.95, 0.95
        }
    )
    d = fd.decide(rec)
    assert d["winner"] == d["best"] == "lr_double"
    assert d["table"]["lr_double"]["mean_ratio"] == pytest.approx(0.95)
    assert d["table"]["lr_half"]["better"] == 1
    assert d["table"]["default"]["mean_ratio"] == pytest.approx(1.0)


def test_decision_a_much_faster_candidate_within_one_percent_wins():
    rec = _records(
        {
            "default": {"A": (1.0, 150), "B": (1.0, 150)},
            "lr_half": {"A": (0.95, 150), "B": (0.95, 150)},  # best: 0.95
            "patience10": {"A": (0.959, 100), "B": (0.959, 100)},  # within 1 %, 1.5x faster
        }
    )
    d = fd.decide(rec)
    assert (d["best"], d["winner"]) == ("lr_half", "patience10")
    slower = _records({"patience10": {"A": (0.959, 101), "B": (0.959, 101)}})
    assert fd.decide(rec[:4] + rec[4:6] + slower)["winner"] == "lr_half"  # only 1.49x faster
    worse = _records({"patience10": {"A": (0.96, 50), "B": (0.96, 50)}})  # 1.05 % worse
    assert fd.decide(rec[:4] + rec[4:6] + worse)["winner"] == "lr_half"


def test_decision_the_default_can_win_and_incomplete_sets_are_left_out():
    rec = _records(
        {
            "default": {"A": (1.0, 100), "B": (1.0, 100), "C": (1.0, 100)},
            "lr_half": {"A": (1.1, 100), "B": (1.05, 100)},  # no result on C
        }
    )
    d = fd.decide(rec)
    assert d["winner"] == "default" and d["sets"] == ["A", "B"]
    assert fd.decide([])["winner"] is None
    assert "Left out (not every candidate has a result): C." in fd.report_section(rec)


def test_seeds_are_averaged_per_set_before_the_ratio():
    rec = _records({"default": {"A": (1.0, 100)}, "lr_half": {"A": (0.8, 100)}})
    rec += [dict(r, seed=1, rmse_select=r["rmse_select"] + 0.2) for r in rec]
    d = fd.decide(rec)
    assert d["table"]["lr_half"]["mean_ratio"] == pytest.approx(0.9 / 1.1)


def test_report_section_replaces_itself_in_the_page():
    page = "# T\n\n## A\n\ntext\n\n" + fd.SECTION + "\n\nold\n\n## Z\n\nend\n"
    rec = _records({"default": {"A": (1.0, 100)}, "lr_half": {"A": (0.8, 60)}})
    new = fd.replace_section(page, fd.report_section(rec))
    assert "old" not in new and new.count(fd.SECTION) == 1
    assert new.startswith("# T\n\n## A\n\ntext\n\n") and new.endswith("\n## Z\n\nend\n")
    assert "| **lr_half** |" in new
    appended = fd.replace_section("# T\n", fd.report_section(rec))
    assert appended.count(fd.SECTION) == 1


def test_a_seed_counts_on_a_set_only_when_every_candidate_has_it():
    rec = _records(
        {
            "default": {"A": (1.0, 100), "B": (1.0, 100)},
            "lr_half": {"A": (0.8, 100), "B": (0.8, 100)},
        }
    )
    rec += [dict(rec[0], seed=1, rmse_select=2.0)]  # seed 1: only the default on A
    rec += [dict(r, seed=1, rmse_select=r["rmse_select"] / 2) for r in rec[1:4:2]]  # B, both
    assert len(fd.counted(rec)) == 6
    d = fd.decide(rec)
    assert d["table"]["lr_half"]["mean_ratio"] == pytest.approx(0.8)  # A: seed 0 only
    assert "1 further run(s)" in fd.report_section(rec)
