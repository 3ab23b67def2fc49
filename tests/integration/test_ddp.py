"""2-process data-parallel training on CPU (Lightning DDP, gloo) vs one process.

Without dropout the two runs differ only in floating-point summation order (each rank computes
the gradient of its half of every global batch; DDP averages them). With dropout the masks are
drawn per rank, so results agree only statistically."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from safetensors.torch import load_file


def _train(data: Path, out: Path, devices: int) -> subprocess.CompletedProcess:
    cmd = [
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
        "3",
        "--batch-size",
        "32",
        "--hidden-dim",
        "16",
        "--heads",
        "2",
        "--num-seeds",
        "4",
        "--dropout",
        "0",
        "--attn-dropout",
        "0",
        "--no-progress",
        "--devices",
        str(devices),
        "--strategy",
        "ddp" if devices > 1 else "auto",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_two_process_ddp_matches_one_process(esol_frame: pd.DataFrame, tmp_path: Path) -> None:
    data = tmp_path / "esol320.csv"
    esol_frame.iloc[:320].to_csv(data, index=False)  # 256 train rows: 8 full batches of 32
    one, two = _train(data, tmp_path / "one", 1), _train(data, tmp_path / "two", 2)
    assert one.returncode == 0, one.stderr[-2000:]
    assert two.returncode == 0, two.stderr[-2000:]
    assert two.stderr.count("training member 1/1") == 2  # really two processes
    m1 = json.loads((tmp_path / "one" / "metrics.json").read_text())
    m2 = json.loads((tmp_path / "two" / "metrics.json").read_text())
    for part in ("train", "val", "test"):
        for key in ("rmse", "mae"):
            assert m2[part]["ensemble"][key] == pytest.approx(m1[part]["ensemble"][key], rel=1e-4)
    s1, s2 = m1["training"]["members"][0], m2["training"]["members"][0]
    assert s2["best_val_loss"] == pytest.approx(s1["best_val_loss"], rel=1e-5)
    assert s2["best_epoch"] == s1["best_epoch"]
    w1 = load_file(str(tmp_path / "one" / "members" / "0" / "model.safetensors"))
    w2 = load_file(str(tmp_path / "two" / "members" / "0" / "model.safetensors"))
    assert max((w1[k] - w2[k]).abs().max().item() for k in w1) < 1e-4
