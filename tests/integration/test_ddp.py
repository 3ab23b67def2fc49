"""2-process data-parallel training and fine-tuning on CPU (Lightning DDP, gloo) vs one process.

Without dropout the two runs differ only in floating-point summation order (each rank computes
the gradient of its half of every global batch; DDP averages them). With dropout the masks are
drawn per rank, so results agree only statistically.

Each run goes through a small wrapper around the CLI that records, per process, every file
written, made or removed under the output directory (a ``sys.addaudithook`` hook: ``open`` for
writing, ``os.mkdir``, ``os.remove``, ``shutil.rmtree``, ``shutil.copytree``, ...). Lightning
relaunches the same script for rank 1 (``LOCAL_RANK=1``), so the record shows which rank wrote
what: only global rank 0 may write the artifact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from molprop.inference.predictor import Predictor
from molprop.models.config import TrainConfig, finetune_train_config
from molprop.training.train import TrainRequest
from molprop.transfer.finetune import FinetuneRequest, run_finetune
from molprop.transfer.pretrain import run_pretrain

TINY = ["--hidden-dim", "16", "--heads", "2", "--num-seeds", "4"]
NO_DROPOUT = ["--dropout", "0", "--attn-dropout", "0"]

AUDITED_CLI = """\
import os, sys

WATCH = os.path.realpath(os.environ["AUDIT_WATCH"])
RANK = os.environ.get("LOCAL_RANK", "0")  # set by Lightning for the processes it launches
RECORD = open(os.path.join(os.environ["AUDIT_DIR"], f"rank{RANK}.tsv"), "a", buffering=1)
WRITING = {"os.mkdir", "os.remove", "os.rename", "os.replace", "os.rmdir", "os.truncate",
           "shutil.rmtree", "shutil.copytree", "shutil.copyfile", "shutil.move"}


def hook(event, args):
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str):
            writes = any(c in mode for c in "wax+")
        else:
            writes = bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
        paths = [path] if writes else []
    elif event in WRITING:
        paths = list(args)
    else:
        return
    for p in paths:
        if isinstance(p, (str, bytes, os.PathLike)):
            p = os.path.realpath(os.fsdecode(p))
            if p == WATCH or p.startswith(WATCH + os.sep):
                RECORD.write(f"{event}\\t{os.path.relpath(p, WATCH)}\\n")


sys.addaudithook(hook)
from molprop.cli.main import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
"""


def _run(args: list[str], out: Path, devices: int, audit: Path) -> subprocess.CompletedProcess:
    """``molprop <args> --out OUT --devices N`` through the audited CLI (OMP_NUM_THREADS=1)."""
    audit.mkdir(parents=True)
    script = audit / "audited_cli.py"
    script.write_text(AUDITED_CLI)
    cmd = [sys.executable, str(script), *args, "--out", str(out), "--no-progress"]
    cmd += ["--devices", str(devices)]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MOLPROP_NO_PROGRESS": "1",
        "AUDIT_DIR": str(audit),
        "AUDIT_WATCH": str(out),
    }
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def _writes(audit: Path, rank: int) -> list[tuple[str, str]]:
    """(event, path relative to the output directory) recorded by one rank."""
    path = audit / f"rank{rank}.tsv"
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(line.split("\t")) for line in lines]


def _opened(writes: list[tuple[str, str]], name: str) -> int:
    """How often ``name`` was written: opened for writing, or a temporary file renamed onto it
    (an atomic write records the temporary file's ``open``, then ``os.replace``'s audit event,
    ``os.rename``, for the temporary file and for ``name``)."""
    return sum(1 for event, path in writes if event in ("open", "os.rename") and path == name)


def _train(data: Path, out: Path, devices: int, audit: Path) -> subprocess.CompletedProcess:
    args = ["train", "--data", str(data), "--smiles-column", "smiles"]
    args += ["--target-columns", "logp", "--split-type", "random"]
    args += ["--epochs", "3", "--batch-size", "32", *TINY, *NO_DROPOUT]
    args += ["--strategy", "ddp" if devices > 1 else "auto"]
    return _run(args, out, devices, audit)


def test_two_process_ddp_matches_one_process(esol_frame: pd.DataFrame, tmp_path: Path) -> None:
    data = tmp_path / "esol320.csv"
    esol_frame.iloc[:320].to_csv(data, index=False)  # 256 train rows: 8 full batches of 32
    one = _train(data, tmp_path / "one", 1, tmp_path / "audit_one")
    two = _train(data, tmp_path / "two", 2, tmp_path / "audit_two")
    assert one.returncode == 0, one.stderr[-2000:]
    assert two.returncode == 0, two.stderr[-2000:]
    assert two.stderr.count("training member 1/1") == 2  # really two processes
    assert _writes(tmp_path / "audit_two", 1) == []  # rank 1 writes nothing
    for audit in ("audit_one", "audit_two"):
        rank0 = _writes(tmp_path / audit, 0)
        assert _opened(rank0, "config.json") == _opened(rank0, "metrics.json") == 1
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


def test_two_process_ddp_finetune_writes_once_and_matches_one_process(
    esol_frame: pd.DataFrame, tmp_path: Path
) -> None:
    """label-augment (inductive) writes the artifact, a copy of the pretrained model and
    metrics.json: all of it on rank 0 alone, and the model equals the one fine-tuned in one
    process (same global batch of 32: 64 training rows, 2 full batches)."""
    esol = esol_frame.iloc[:200]
    esol.iloc[:100].to_csv(tmp_path / "pre.csv", index=False)
    run_pretrain(
        TrainRequest(
            data=tmp_path / "pre.csv",
            smiles_column="smiles",
            target_columns=["logp"],
            out=tmp_path / "pre",
            model={"hidden_dim": 16, "heads": 2, "num_seeds": 4, "dropout": 0.0},
            train=TrainConfig(epochs=1, batch_size=32, lr=1e-3),
            progress=False,
        ),
        holdout=0.0,
    )
    parts = {"train": esol.iloc[100:164], "val": esol.iloc[164:182], "test": esol.iloc[182:]}
    for name, part in parts.items():
        part.to_csv(tmp_path / f"{name}.csv", index=False)
    cfg = finetune_train_config(epochs=3, batch_size=32, lr=1e-3)  # what the CLI trains with
    one = run_finetune(
        FinetuneRequest(
            pretrained=tmp_path / "pre",
            data=tmp_path / "train.csv",
            val_data=tmp_path / "val.csv",
            test_data=tmp_path / "test.csv",
            target_columns=["logp"],
            out=tmp_path / "ft_one",
            strategy="label-augment",
            mode="inductive",
            train=cfg,
            progress=False,
        )
    )
    assert one.written and one.fresh_head and one.directory == tmp_path / "ft_one"
    args = ["finetune", "--from", str(tmp_path / "pre"), "--data", str(tmp_path / "train.csv")]
    args += ["--val", str(tmp_path / "val.csv"), "--test", str(tmp_path / "test.csv")]
    args += ["--target-columns", "logp", "--strategy", "label-augment", "--mode", "inductive"]
    args += ["--epochs", str(cfg.epochs), "--batch-size", str(cfg.batch_size), "--lr", "1e-3"]
    audit = tmp_path / "audit"
    two = _run(args, tmp_path / "ft_two", 2, audit)
    assert two.returncode == 0, two.stderr[-2000:]
    assert two.stderr.count("training member 1/1") == 2  # really two processes
    assert _writes(audit, 1) == []  # rank 1 writes nothing
    rank0 = _writes(audit, 0)  # the hook does see rank 0 write everything, once
    assert _opened(rank0, "config.json") == _opened(rank0, "metrics.json") == 1
    assert _opened(rank0, "pretrained/config.json") == 1
    assert [p for e, p in rank0 if e == "shutil.copytree" and "/" not in p] == ["pretrained"]
    smiles = parts["test"]["smiles"].tolist()
    p1 = Predictor.from_pretrained(tmp_path / "ft_one").predict(smiles)
    p2 = Predictor.from_pretrained(tmp_path / "ft_two").predict(smiles)
    assert (p1["status"] == "ok").all() and (p2["status"] == "ok").all()
    np.testing.assert_allclose(p2["logp"], p1["logp"], rtol=1e-4, atol=1e-4)
    m2 = json.loads((tmp_path / "ft_two" / "metrics.json").read_text())
    assert m2["test"]["ensemble"]["rmse"] == pytest.approx(one.ensemble("test")["rmse"], rel=1e-4)
    assert m2["training"]["members"][0]["best_epoch"] == one.summaries[0]["best_epoch"]
