"""``molprop hpopt``: two real worker processes share one SQLite study (every trial counted
once, none lost), the objective never sees a test row, the best preset reaches the config of a
model trained with ``--preset FILE``, and the reports (CSV, markdown, PNG) are written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest

from molprop.artifact.store import load_config
from molprop.cli.main import main
from molprop.errors import ConfigError
from molprop.training.hpopt import SearchRequest, SearchSpace, run_search, search_data, storage_for
from molprop.training.tables import SplitSpec, TableSpec

#: a tiny space: every trial trains in about a second
SPACE = {"hidden_dim": [8, 16], "heads": [2], "layers": ["MSP", "MP"], "num_seeds": [2, 4]}
TRIALS_PER_WORKER = 2


@pytest.fixture(scope="module")
def esol100(tmp_path_factory, esol_frame) -> Path:
    path = tmp_path_factory.mktemp("data") / "esol100.csv"
    esol_frame.head(100).to_csv(path, index=False)
    return path


def _cli(data: Path, out: Path, *extra: str) -> list[str]:
    space = out.parent / "space.json"
    space.write_text(json.dumps(SPACE))
    return [
        "hpopt",
        "--data",
        str(data),
        "--target-columns",
        "logp",
        "--split-type",
        "random",
        "--out",
        str(out),
        "--epochs",
        "2",
        "--space",
        str(space),
        "--pruner-startup-trials",
        "2",
        "--pruner-warmup-epochs",
        "0",
        "--no-progress",
        *extra,
    ]


@pytest.fixture(scope="module")
def shared_study(tmp_path_factory, esol100) -> Path:
    """Two worker processes started together on one SQLite study (the default storage)."""
    out = tmp_path_factory.mktemp("hpopt") / "search"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "molprop.cli.main"]
            + _cli(esol100, out, "--trials", str(TRIALS_PER_WORKER), "--seed", str(seed)),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for seed in (0, 1)
    ]
    logs = [w.communicate(timeout=240)[0] for w in workers]
    for w, text in zip(workers, logs):
        assert w.returncode == 0, text[-3000:]
    return out


def test_two_workers_share_one_study(shared_study):
    study = optuna.load_study(study_name="molprop", storage=f"sqlite:///{shared_study}/study.db")
    trials = study.get_trials()
    assert sorted(t.number for t in trials) == list(range(2 * TRIALS_PER_WORKER))
    states = {t.state for t in trials}
    assert states <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    per_worker = pd.Series([t.user_attrs["worker"] for t in trials]).value_counts()
    assert sorted(per_worker.tolist()) == [TRIALS_PER_WORKER, TRIALS_PER_WORKER]
    for t in trials:  # every trial drew from the given space
        assert (
            t.params["hidden_dim"] in SPACE["hidden_dim"] and t.params["layers"] in SPACE["layers"]
        )
    frame = pd.read_csv(shared_study / "trials.csv")
    assert sorted(frame["trial"]) == list(range(2 * TRIALS_PER_WORKER))  # the whole study
    assert (shared_study / "trials.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| trial | state | val_loss |" in (shared_study / "trials.md").read_text()
    best = json.loads((shared_study / "best_preset.json").read_text())
    assert best == study.best_trial.user_attrs["preset"]
    assert study.best_value == pytest.approx(frame["val_loss"][frame["state"] == "COMPLETE"].min())


def test_best_preset_reaches_the_trained_models_config(shared_study, esol100, tmp_path):
    preset = json.loads((shared_study / "best_preset.json").read_text())
    out = tmp_path / "model"
    argv = ["train", "--data", str(esol100), "--target-columns", "logp", "--epochs", "1"]
    assert main(argv + ["--preset", str(shared_study / "best_preset.json"), "--out", str(out)]) == 0
    config = load_config(out)
    for section in ("model", "train"):
        for key, value in preset[section].items():
            assert getattr(getattr(config, section), key) == value, (section, key)


def test_objective_never_sees_test_rows(tmp_path, esol_frame):
    frame = esol_frame.head(90).copy()
    frame["part"] = np.resize(["train", "train", "train", "train", "val", "test"], len(frame))
    test = frame["part"] == "test"
    frame.loc[test, "logp"] = 1e6  # a test row anywhere in a trial would blow up its loss
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    request = SearchRequest(
        table=TableSpec(path, "smiles", ["logp"], progress=False),
        split=SplitSpec("column", column="part"),
        out=tmp_path / "out",
        space=SearchSpace.from_dict(SPACE),
        epochs=1,
        n_trials=1,
        storage=str(tmp_path / "study.journal"),  # the journal file backend
        progress=False,
    )
    data = search_data(request)
    assert data.n_test_held_out == int(test.sum())
    assert data.base_model["pair_rbf"] == 0  # 2D: no distances, no pair Gaussians
    assert set(data.train_rows) == set(np.flatnonzero(frame["part"] == "train"))
    assert set(data.val_rows) == set(np.flatnonzero(frame["part"] == "val"))
    study = run_search(request)
    assert len(study.trials) == 1
    assert study.best_value < 10  # scaled MSE; with a 1e6 label it would be ~1e11


def test_storage_and_space_errors_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="SQLAlchemy URL"):
        storage_for(str(tmp_path / "study.txt"), tmp_path)
    with pytest.raises(ConfigError, match="unknown setting"):
        SearchSpace.from_dict({"width": [3]})
    with pytest.raises(ConfigError, match="divisible"):
        SearchSpace(hidden_dim=(12,), heads=(8,))
