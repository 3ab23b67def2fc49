"""Kill ``molprop train`` mid-epoch, ``--resume``, and compare with an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from safetensors.torch import load_file

from molprop.training.resume import STATE_JSON

EPOCHS = 5


def _train_cmd(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "molprop.cli.main",
        "train",
        "--data",
        str(data),
        "--smiles-column",
        "smiles",
        "--target-columns",
        "logp",
        "--out",
        str(out),
        "--split-type",
        "random",
        "--epochs",
        str(EPOCHS),
        "--batch-size",
        "16",
        "--hidden-dim",
        "16",
        "--heads",
        "2",
        "--num-seeds",
        "4",
        "--dropout",
        "0.1",
        "--no-progress",
        *extra,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}


@pytest.fixture(scope="module")
def small_esol(tmp_path_factory, esol_frame: pd.DataFrame) -> Path:
    path = tmp_path_factory.mktemp("resume") / "esol300.csv"
    esol_frame.iloc[:300].to_csv(path, index=False)
    return path


def _epochs_done(state: Path) -> int:
    try:
        return int(json.loads(state.read_text())["epochs_done"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


def test_killed_run_resumes_to_the_uninterrupted_result(small_esol: Path, tmp_path: Path) -> None:
    full, cut = tmp_path / "full", tmp_path / "cut"
    # the uninterrupted run goes alongside the one to kill (1 thread each: the same weights
    # whatever else runs; waited for below)
    full_log = open(tmp_path / "full.log", "wb")  # noqa: SIM115 - closed after the wait below
    uninterrupted = subprocess.Popen(
        _train_cmd(small_esol, full), env=_env(), stdout=subprocess.DEVNULL, stderr=full_log
    )
    proc = subprocess.Popen(
        _train_cmd(small_esol, cut),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state = cut / "logs" / "member_0" / "checkpoint" / STATE_JSON
    deadline = time.time() + 90
    while _epochs_done(state) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.kill()  # the state is written at the start of an epoch: this kill lands inside it
    proc.wait()
    assert 2 <= _epochs_done(state) < EPOCHS, "the run was not interrupted mid-training"
    assert not (cut / "metrics.json").exists()

    done = subprocess.run(
        _train_cmd(small_esol, cut, "--resume"), env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resumed from" in done.stderr
    uninterrupted.wait(timeout=300)
    full_log.close()
    assert uninterrupted.returncode == 0, (tmp_path / "full.log").read_text()[-2000:]

    a = load_file(str(full / "members" / "0" / "model.safetensors"))
    b = load_file(str(cut / "members" / "0" / "model.safetensors"))
    assert a.keys() == b.keys()
    for key in a:  # same seed, same replayed epochs: same weights (CPU, one process)
        assert (a[key] - b[key]).abs().max().item() <= 1e-6, key
    ma = json.loads((full / "metrics.json").read_text())
    mb = json.loads((cut / "metrics.json").read_text())
    assert ma["test"]["ensemble"]["rmse"] == pytest.approx(mb["test"]["ensemble"]["rmse"], rel=1e-6)
    sa, sb = ma["training"]["members"][0], mb["training"]["members"][0]
    assert (sa["best_epoch"], sa["epochs_run"]) == (sb["best_epoch"], sb["epochs_run"])


def test_sigterm_fails_loudly_and_resume_refuses_changed_settings(
    small_esol: Path, tmp_path: Path
) -> None:
    """SIGTERM (a scheduler, ``kill``) mid-training: exit status 143, a message naming the
    checkpoints and ``--resume``, no artifact (Lightning's SIGTERM exit alone is status 0 and
    silent). Resuming with other settings is then refused."""
    out = tmp_path / "run"
    env = _env()
    proc = subprocess.Popen(
        _train_cmd(small_esol, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    state = out / "logs" / "member_0" / "checkpoint" / STATE_JSON
    deadline = time.time() + 90
    while _epochs_done(state) < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr.decode()[-2000:]
    message = stderr.decode()
    assert "interrupted" in message and "SIGTERM" in message and "--resume" in message
    assert str(state.parent) in message
    assert not (out / "config.json").exists() and not (out / "metrics.json").exists()
    changed = [a if a != "0.1" else "0.2" for a in _train_cmd(small_esol, out, "--resume")]
    res = subprocess.run(changed, env=env, capture_output=True, text=True)
    assert res.returncode != 0
    assert "cannot resume" in res.stderr
