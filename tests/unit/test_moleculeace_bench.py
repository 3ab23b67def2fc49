"""benchmarks/moleculeace: the MinMax kernel, the cliff RMSE, the resumable results file, the
parser of the published results and the nested learning-curve subsets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import moleculeace as ace


def test_minmax_kernel_matches_a_hand_computation():
    a = np.array([[2, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 3]], dtype=float)
    k = ace.minmax_kernel(a, a)
    # sum of minima / sum of maxima, pair by pair
    assert k[0, 1] == pytest.approx((1 + 0 + 1 + 0) / (2 + 1 + 1 + 1))  # 2 / 5
    assert k[0, 2] == pytest.approx(0 / (2 + 0 + 1 + 3))
    assert k[1, 2] == pytest.approx((0 + 0 + 0 + 1) / (1 + 1 + 1 + 3))  # 1 / 6
    np.testing.assert_allclose(np.diag(k), 1.0)
    np.testing.assert_allclose(k, k.T)
    empty = np.zeros((1, 4))
    assert ace.minmax_kernel(empty, empty)[0, 0] == 1.0  # two empty fingerprints: identical
    assert ace.minmax_kernel(empty, a[:1])[0, 0] == 0.0


def test_ecfp_counts_are_counts():
    x = ace.ecfp_counts(["CCCCCC", "c1ccccc1"], bits=256)
    assert x.shape == (2, 256)
    assert x[0].max() > 1  # repeated CH2 environments are counted, not just flagged
    with pytest.raises(ValueError, match="cannot parse"):
        ace.ecfp_counts(["not a smiles"])


def test_cliff_rmse_uses_only_the_flagged_molecules():
    test = pd.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "cliff_mol": [0, 1, 0, 1]})
    pred = np.array([1.0, 3.0, 3.0, 2.0])  # errors 0, 1, 0, -2
    s = ace.ace_scores(pred, test)
    assert s["rmse"] == pytest.approx(np.sqrt((0 + 1 + 0 + 4) / 4))
    assert s["rmse_cliff"] == pytest.approx(np.sqrt((1 + 4) / 2))
    assert s["rmse_noncliff"] == pytest.approx(0.0)
    assert (s["n_test"], s["n_cliff"]) == (4, 2)


def test_refused_molecules_get_the_training_mean_and_are_counted():
    train = pd.DataFrame({"y": [1.0, 2.0, 6.0]})
    pred, info = ace.fill_refused(np.array([0.5, np.nan, 1.5]), train, ["CI: contains I"])
    np.testing.assert_allclose(pred, [0.5, 3.0, 1.5])
    assert info == {"n_refused": 1, "refused": ["CI: contains I"]}
    pred, info = ace.fill_refused(np.array([0.5]), train, [])
    assert info == {"n_refused": 0}


def test_done_runs_are_skipped_on_rerun(tmp_path, monkeypatch):
    results = tmp_path / "r.jsonl"
    ace.append_jsonl(results, {"method": "svm", "set": "A", "seed": 0, "rmse": 0.5})
    calls = []

    def fake_run(method, train, test, seed, work, exe):
        calls.append((method, seed))
        return np.zeros(len(test)), {}

    frame = pd.DataFrame({"smiles": ["C"] * 4, "y": [0.0, 1.0, 0.0, 1.0], "cliff_mol": 0})
    monkeypatch.setattr(ace, "run_method", fake_run)
    monkeypatch.setattr(ace, "load_set", lambda data, name: (frame, frame))
    args = type("Args", (), {"data": tmp_path, "work": tmp_path / "work"})()
    jobs = ace.main_jobs(["svm"], ["A"], [0, 1])
    ace.run_jobs(jobs, results, ace.MAIN_KEY, args, None)
    assert calls == [("svm", 1)]  # seed 0 was already there
    ace.run_jobs(jobs, results, ace.MAIN_KEY, args, None)
    assert calls == [("svm", 1)]  # nothing left the second time
    rows = ace.read_jsonl(results)
    assert [(r["seed"], r["rmse"]) for r in rows] == [(0, 0.5), (1, pytest.approx(np.sqrt(0.5)))]
    assert all(json.loads(line) for line in results.read_text().splitlines())


def test_curve_subsets_are_nested_and_seeded():
    train = pd.DataFrame({"smiles": [f"C{i}" for i in range(300)], "y": range(300)})
    small, large = ace.subset(train, 50, 0), ace.subset(train, 200, 0)
    assert len(small) == 50 and len(large) == 200
    assert set(small["smiles"]) < set(large["smiles"])
    assert set(ace.subset(train, 50, 1)["smiles"]) != set(small["smiles"])


def test_published_markdown_is_parsed_per_seed_and_set():
    text = "\n".join(
        [
            "# Results",
            "## Random Seed 42",
            "### `CHEMBL1862_Ki`",
            "| metric | value |",
            "|:--|--:|",
            "| overall test rmse  | 0.729604 |",
            "| noncliff test rmse | 0.759236 |",
            "| cliff test rmse    | 0.685876 |",
            "## Random Seed 117",
            "### `CHEMBL1862_Ki`",
            "| overall test rmse  | 0.7 |",
            "| noncliff test rmse | 0.8 |",
            "| cliff test rmse    | 0.6 |",
        ]
    )
    rows = ace.parse_published(text)
    assert rows == [
        {
            "seed": 42,
            "set": "CHEMBL1862_Ki",
            "rmse": 0.729604,
            "rmse_noncliff": 0.759236,
            "rmse_cliff": 0.685876,
        },
        {"seed": 117, "set": "CHEMBL1862_Ki", "rmse": 0.7, "rmse_noncliff": 0.8, "rmse_cliff": 0.6},
    ]


def test_win_counts_and_ratio():
    ours = {"A": {"rmse": 0.5}, "B": {"rmse": 1.0}, "C": {"rmse": 0.9}}
    other = {"A": {"rmse": 0.6}, "B": {"rmse": 0.8}, "D": {"rmse": 9.0}}
    c = ace.compare(ours, other)
    assert (c["n"], c["wins"]) == (2, 1)
    assert c["ratio_of_means"] == pytest.approx(0.75 / 0.7)


def test_current_settings_follow_the_finetune_parser(monkeypatch):
    from molprop.cli import finetune

    now = ace.current_settings("foundation")
    assert now["epochs"] == finetune.DEFAULTS["epochs"]
    assert now["schedule"] == finetune.DEFAULTS["schedule"]
    assert now["transfer_strategy"] == "full"
    assert not set(ace.RUN_ONLY) & set(now)  # the seed etc. do not make a run stale
    # a change of finetune's defaults changes what counts as current
    monkeypatch.setitem(finetune.DEFAULTS, "epochs", 7)
    ace._current_settings_json.cache_clear()
    try:
        assert ace.current_settings("foundation")["epochs"] == 7
    finally:
        monkeypatch.undo()
        ace._current_settings_json.cache_clear()


def test_artifact_settings_read_the_config(tmp_path):
    train = {**ace.current_settings("foundation"), "seed": 3, "devices": 1, "resume": False}
    train.pop("transfer_strategy")
    config = {"train": train, "extra": {"strategy": "full", "finetuned_from": "x"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert ace.artifact_settings(tmp_path) == ace.current_settings("foundation")
    assert ace.artifact_settings(tmp_path / "absent") == {}


def fake_records(method: str = "foundation") -> list[dict]:
    now = ace.current_settings("foundation")
    old = {**now, "epochs": 120, "schedule": "plateau", "warmup_epochs": 0}
    base = {"n_train": 4, "rmse_cliff": 1.0}
    return [
        {"method": method, "set": "A", "seed": 0, "rmse": 0.9, **base},  # no settings: stale
        {"method": method, "set": "B", "seed": 0, "rmse": 0.8, "settings": old, **base},
        {"method": method, "set": "C", "seed": 0, "rmse": 0.7, "settings": now, **base},
        {"method": "scratch", "set": "A", "seed": 0, "rmse": 0.6, **base},  # not checked
    ]


@pytest.mark.parametrize("curve", [False, True])
def test_stale_foundation_runs_are_run_again_and_left_out_of_the_report(
    tmp_path, monkeypatch, curve
):
    results = tmp_path / "r.jsonl"
    records = fake_records()
    if curve:
        records = [{**r, "n_train": 100} for r in records]
    for r in records:
        ace.append_jsonl(results, r)
    calls = []

    def fake_run(method, train, test, seed, work, exe):
        calls.append((method, seed))
        return np.zeros(len(test)), {"settings": ace.current_settings("foundation")}

    frame = pd.DataFrame({"smiles": ["C"] * 200, "y": [0.0, 1.0] * 100, "cliff_mol": 0})
    monkeypatch.setattr(ace, "run_method", fake_run)
    monkeypatch.setattr(ace, "load_set", lambda data, name: (frame, frame))
    args = type("Args", (), {"data": tmp_path, "work": tmp_path / "work"})()
    size = {"n_train": 100} if curve else {}
    jobs = [{"method": "foundation", "set": s, **size, "seed": 0} for s in "ABC"]
    jobs.append({"method": "scratch", "set": "A", **size, "seed": 0})
    key = ace.CURVE_KEY if curve else ace.MAIN_KEY
    ace.run_jobs(jobs, results, key, args, None)
    # A and B's foundation runs were stale; C's is current; scratch runs are never stale
    assert calls == [("foundation", 0), ("foundation", 0)]
    rows = ace.read_jsonl(results)
    assert len(rows) == 6  # the stale records stay in the file
    current, stale = ace.split_current(rows)
    assert sorted(r["set"] for r in stale) == ["A", "B"]
    assert sorted((r["method"], r["set"]) for r in current) == [
        ("foundation", "A"),
        ("foundation", "B"),
        ("foundation", "C"),
        ("scratch", "A"),
    ]
    ace.run_jobs(jobs, results, key, args, None)
    assert len(calls) == 2  # nothing left the second time


def test_report_ignores_and_counts_stale_runs(tmp_path, monkeypatch):
    results, curve = tmp_path / "r.jsonl", tmp_path / "c.jsonl"
    for r in fake_records():
        ace.append_jsonl(results, r)
    for r in fake_records():
        ace.append_jsonl(curve, {**r, "n_train": 100, "set": "CHEMBL214_Ki"})
    monkeypatch.setattr(ace, "RESULT_FILE", results)
    monkeypatch.setattr(ace, "CURVE_FILE", curve)
    monkeypatch.setattr(ace, "PUBLISHED_FILE", tmp_path / "none.csv")
    monkeypatch.setattr(ace, "PLOT", tmp_path / "curve.png")
    monkeypatch.setattr(ace, "SETS", ("A", "B", "C"))
    text = ace.report(tmp_path)
    assert "Set aside: 2 foundation runs on the 30 sets and 2 on the learning curve" in text
    assert "--epochs 30 --schedule warmup_decay --warmup-epochs 2" in text
    row_a = next(line for line in text.splitlines() if line.startswith("| A |"))
    row_c = next(line for line in text.splitlines() if line.startswith("| C |"))
    assert "0.900" not in row_a and "0.600" in row_a  # the stale foundation run is not shown
    assert "0.700" in row_c
    # the learning-curve target sees only the current foundation run (none at 100 on 214: C)
    assert "0.900" not in text.split("## Learning curve")[1]


def test_first_methods_run_before_the_others():
    passes = ace.run_passes(["svm", "curve", "neural"], list(ace.METHODS), ["foundation"])
    assert passes == [
        (["neural", "curve"], ["foundation"]),
        (["svm", "curve", "neural"], list(ace.METHODS)),
    ]
    assert ace.run_passes(["svm"], ["svm"], []) == [(["svm"], ["svm"])]
