"""Foundation pretraining in 2 data-parallel processes (Lightning DDP, gloo, CPU) makes the same
optimiser steps as one process: the same steps, molecules and validation losses."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from molprop.corpus.build import CorpusSource, build_corpus
from molprop.corpus.labels import compute_labels
from molprop.training.foundation import featurize_shards


@pytest.mark.slow
def test_two_processes_train_like_one(tmp_path, esol_frame, repo_root):
    src = tmp_path / "esol.csv"
    esol_frame[["smiles"]].to_csv(src, index=False)
    data = tmp_path / "data"
    build_corpus([CorpusSource("esol", str(src), "test")], data, progress=False)
    compute_labels(data, 200, workers=1, progress=False)
    featurize_shards(data, progress=False)  # before the ranks start
    env = {**os.environ, "PYTHONPATH": str(repo_root), "OMP_NUM_THREADS": "1"}
    rows = {}
    for devices in (1, 2):
        run = tmp_path / f"run{devices}"
        cmd = [
            sys.executable, "-m", "molprop.cli.main", "foundation", "pretrain",
            "--data", str(data), "--run", str(run), "--val", "40", "--epochs", "2",
            "--batch-size", "32", "--val-every", "3", "--threads", "1",
            "--accelerator", "cpu", "--devices", str(devices),
            "--strategy", "ddp" if devices > 1 else "auto",
        ]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr[-3000:]
        with open(run / "metrics.csv", newline="") as fh:
            rows[devices] = list(csv.DictReader(fh))
    one, two = rows[1], rows[2]
    assert [r["step"] for r in one] == [r["step"] for r in two]
    assert [r["molecules_seen"] for r in one] == [r["molecules_seen"] for r in two]
    np.testing.assert_allclose(
        [float(r["val_loss"]) for r in one], [float(r["val_loss"]) for r in two], rtol=2e-3
    )
