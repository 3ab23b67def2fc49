"""Streaming ``molprop predict``: row order, bounded memory, kill + resume, SMI / SDF inputs,
output written via ``<output>.partial`` (a failed run keeps an existing output), blank lines.

The inputs are the real ESOL SMILES (plus one invalid SMILES) repeated to N rows, so output row
i must carry the prediction of base row ``i % n_base``. The model is a tiny 2-member ESA with
random weights (hidden 16): only the streaming machinery is under test.

In-suite the memory check compares 20,000 with 100,000 rows streamed in chunks of 500 (with
2k vs 10k rows, one 10k chunk, i.e. no streaming, raised the peak by ~100 MiB; chunks of 500 by
~10 MiB); the shipped-size model at scale is ``benchmarks/scale_predict.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.config import ArtifactConfig
from molprop.artifact.domain import add_domain_to_artifact
from molprop.artifact.store import save_artifact
from molprop.cli.main import main
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.inference.predictor import Predictor
from molprop.inference.streaming import predict_stream
from molprop.io.sink import complete_records, partial_path
from molprop.models.config import ModelConfig, TaskConfig
from molprop.training.fit import build_model

INVALID = "C1CC(notasmiles"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("stream")


@pytest.fixture(scope="module")
def tiny_model(work: Path) -> Path:
    fc = FeaturizerConfig()
    g = build_featurizer(fc).from_smiles("CCO")
    mc = ModelConfig(
        node_dim=g.x.shape[1],
        edge_dim=g.edge_attr.shape[1],
        n_tasks=1,
        heads=2,
        hidden_dim=16,
        layers="MSP S",
        num_seeds=4,
        head_hidden=32,
    )
    task = TaskConfig(("logs",), "regression", ("log mol/L",), (-3.0,), (2.0,))
    config = ArtifactConfig(model=mc, task=task, featurizer=fc, n_members=2)
    save_artifact(work / "model", config, [build_model(mc, 0), build_model(mc, 1)])
    return work / "model"


@pytest.fixture(scope="module")
def base(esol_frame: pd.DataFrame) -> list[str]:
    smiles = esol_frame["smiles"].tolist()[:400]
    smiles[7] = INVALID
    return smiles


@pytest.fixture(scope="module")
def base_predictions(tiny_model: Path, base: list[str]) -> pd.DataFrame:
    return Predictor.from_pretrained(tiny_model).predict(base)


def write_input(path: Path, base: list[str], rows: int) -> Path:
    frame = pd.DataFrame(
        {
            "id": np.arange(rows),
            "smiles": [base[i % len(base)] for i in range(rows)],
            "note": [f'row "{i}", quoted\nsecond line' if i % 97 == 0 else "" for i in range(rows)],
        }
    )
    frame.to_csv(path, index=False)
    return path


def check_output(out: pd.DataFrame, rows: int, base_predictions: pd.DataFrame) -> None:
    """Exactly one output row per input row, in input order, with the base row's prediction."""
    assert len(out) == rows
    assert out["id"].tolist() == list(range(rows))
    expect = base_predictions.iloc[np.arange(rows) % len(base_predictions)].reset_index(drop=True)
    assert out["smiles"].tolist() == expect["smiles"].tolist()
    assert out["status"].tolist() == expect["status"].tolist()
    for col in ("logs", "logs_std"):
        np.testing.assert_allclose(
            out[col].to_numpy(float),
            expect[col].to_numpy(float),
            rtol=1e-5,
            atol=1e-6,
            equal_nan=True,
        )
    assert (out.loc[out["smiles"] == INVALID, "status"] == "invalid_input").all()
    assert out["note"].fillna("").tolist()[97] == 'row "97", quoted\nsecond line'


def read_out(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "molprop.cli.main", "predict", "--no-progress", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}


def test_worker_processes_keep_row_order(tiny_model, base, base_predictions, work) -> None:
    source = write_input(work / "order.csv", base, 2500)
    out = work / "order_out.csv"
    summary = predict_stream(
        Predictor.from_pretrained(tiny_model),
        source,
        out,
        chunk_size=300,
        num_workers=2,
        progress=False,
    )
    assert summary.rows_total == summary.rows_written == 2500
    check_output(read_out(out), 2500, base_predictions)


_PEAK_CODE = """
import sys
from molprop.inference.predictor import Predictor
from molprop.inference.streaming import predict_stream

def hwm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

p = Predictor.from_pretrained(sys.argv[1])
p.predict(["CCO", "c1ccccc1O"])  # lazy imports and first-call allocations before the reset
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # resets the peak resident size (VmHWM) to the current one
before = hwm_kib()
predict_stream(p, sys.argv[2], sys.argv[3], chunk_size=int(sys.argv[4]), progress=False)
print("GROWTH_KIB", hwm_kib() - before)
"""


def _peak_growth_mb(model: Path, source: Path, out: Path, chunk: int = 500) -> float:
    """How far the peak resident size of a fresh process rises above what it had after loading
    the model, while it streams ``source`` (in-process, not through the CLI: the CLI parser
    imports every subcommand, and that import peak, ~500 MiB, would hide the prediction's)."""
    cmd = [sys.executable, "-c", _PEAK_CODE, str(model), str(source), str(out), str(chunk)]
    res = subprocess.run(cmd, env=_env(), capture_output=True, text=True, check=True)
    line = [x for x in res.stdout.splitlines() if x.startswith("GROWTH_KIB")][-1]
    return int(line.split()[1]) / 1024.0


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_peak_memory_does_not_grow_with_rows(tiny_model, base, base_predictions, work) -> None:
    """3k vs 15k rows in chunks of 500: the peak of the prediction itself must not follow the
    row count (the 1M-row scale is measured in benchmarks/scale_predict.py; the earlier 20k vs
    100k version of this test took 144 s and compared whole-process peaks, which the import
    peak hid: it passed with streaming switched off)."""
    small = write_input(work / "small.csv.gz", base, 3_000)
    big = write_input(work / "big.csv.gz", base, 15_000)
    grow_small = _peak_growth_mb(tiny_model, small, work / "small_out.csv")
    grow_big = _peak_growth_mb(tiny_model, big, work / "big_out.csv")
    # measured (2 cores, this tiny model): +27 / +55 MiB in chunks of 500 (the peak still
    # creeps ~2 KiB per row, see docs/results/scale.md); one 15k chunk (no streaming): +126 MiB
    # vs +39 MiB for one 3k chunk
    assert grow_big - grow_small < 45.0, (grow_small, grow_big)
    check_output(read_out(work / "big_out.csv"), 15_000, base_predictions)


def test_killed_run_resumes_without_duplicates_or_gaps(
    tiny_model, base, base_predictions, work
) -> None:
    rows = 4000
    source = write_input(work / "kill.csv", base, rows)
    out = work / "kill_out.csv"
    out.write_text("an earlier output\n")
    staged = partial_path(out)
    proc = subprocess.Popen(
        _cli(
            "--model",
            str(tiny_model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--chunk-size",
            "200",
        ),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline:
        if staged.exists() and complete_records(staged)[0] > 800:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert out.read_text() == "an earlier output\n"  # the kill left the old output alone
    done = complete_records(staged)[0] - 1
    assert 0 < done < rows, "the run was not interrupted mid-file"
    with open(staged, "ab") as fh:  # as if killed inside a write: a partial last record
        fh.write(b'123,CCO,"half a quoted\nfield')
    res = subprocess.run(
        _cli(
            "--model",
            str(tiny_model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--chunk-size",
            "200",
            "--resume",
        ),
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"resuming {staged}: {done} rows" in res.stderr
    check_output(read_out(out), rows, base_predictions)
    assert not staged.exists()


def test_smi_and_sdf_inputs(tiny_model, base_predictions, work) -> None:
    from rdkit import Chem

    predictor = Predictor.from_pretrained(tiny_model)
    smiles = ["CCO", "c1ccccc1O", INVALID, "CC(=O)N"]
    smi = work / "in.smi"
    smi.write_text("".join(f"{s} mol{i}\n" for i, s in enumerate(smiles)))
    predict_stream(predictor, smi, work / "smi_out.csv", chunk_size=3, progress=False)
    out = read_out(work / "smi_out.csv")
    assert out["smiles"].tolist() == smiles
    assert out["name"].tolist() == [f"mol{i}" for i in range(4)]
    assert out["status"].tolist() == ["ok", "ok", "invalid_input", "ok"]
    expect = predictor.predict(smiles)
    np.testing.assert_allclose(out["logs"], expect["logs"], rtol=1e-5, equal_nan=True)

    sdf = work / "in.sdf"
    writer = Chem.SDWriter(str(sdf))
    for i, s in enumerate(["CCO", "c1ccccc1O"]):
        mol = Chem.MolFromSmiles(s)
        mol.SetProp("_Name", f"m{i}")
        mol.SetProp("measured", str(i + 0.5))
        writer.write(mol)
    writer.close()
    broken = "bad\n  RDKit\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\nnot an atom\nM  END\n$$$$\n"
    sdf.write_text(sdf.read_text() + broken)
    predict_stream(predictor, sdf, work / "sdf_out.csv", chunk_size=2, progress=False)
    out = read_out(work / "sdf_out.csv")
    assert out["name"].tolist()[:2] == ["m0", "m1"] and out["measured"].tolist()[:2] == [0.5, 1.5]
    assert out["status"].tolist() == ["ok", "ok", "invalid_input"]
    assert "SDF record 2" in out["error"].iloc[2]
    np.testing.assert_allclose(out["logs"][:2], expect["logs"][:2], rtol=1e-5)


def test_two_process_lightning_predict_matches_one_process(
    tiny_model, base, base_predictions, work
) -> None:
    """``--devices 2 --strategy ddp``: Lightning launches a second process, each predicts every
    other chunk, rank 0 merges the parts in input order."""
    source = write_input(work / "ddp.csv", base, 1000)
    out = work / "ddp_out.csv"
    run = subprocess.run(
        _cli(
            "--model",
            str(tiny_model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--chunk-size",
            "150",
            "--devices",
            "2",
            "--strategy",
            "ddp",
            "--num-workers",
            "1",
        ),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "on 2 processes" in run.stderr  # really distributed
    check_output(read_out(out), 1000, base_predictions)
    assert not (work / "ddp_out.csv.partial.parts").exists()  # parts merged and removed
    assert not partial_path(out).exists()  # renamed to the output


def test_two_process_predict_resumes_from_output_and_parts(
    tiny_model, base, base_predictions, work
) -> None:
    """An interrupted distributed run leaves a partial output (rows 0-199 and half a row) and
    the part files other ranks finished (rows 300-399 and 500-599, plus a stale part already
    in the output). ``--resume`` keeps them (a marked value in a kept part survives), predicts
    only the rest and merges without duplicate or missing rows."""
    source = write_input(work / "ddp_resume.csv", base, 750)
    full = work / "ddp_full.csv"
    predict_stream(
        Predictor.from_pretrained(tiny_model), source, full, chunk_size=100, progress=False
    )
    out = work / "ddp_resume_out.csv"  # a partial output of a run without .partial staging
    records, end, _ = complete_records(full)
    text = full.read_bytes()
    ref = pd.read_csv(full, dtype=str, keep_default_na=False)
    head = ref.iloc[:200].to_csv(index=False, lineterminator="\n").encode()
    out.write_bytes(
        head
        + ref.iloc[200:201].to_csv(index=False, header=False, lineterminator="\n").encode()[:15]
    )
    parts = work / "ddp_resume_out.csv.partial.parts"  # the parts of the staged output
    parts.mkdir(exist_ok=True)
    for start in (0, 300, 500):
        part = ref.iloc[start : start + 100].copy()
        if start == 300:
            part.loc[part.index[0], "logs"] = "123.5"  # proves the part is kept, not recomputed
        part.to_csv(parts / f"{start:012d}_100.csv", index=False, lineterminator="\n")
    run = subprocess.run(
        _cli(
            "--model",
            str(tiny_model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--chunk-size",
            "100",
            "--devices",
            "2",
            "--strategy",
            "ddp",
            "--resume",
        ),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = read_out(out)
    assert got.loc[300, "logs"] == 123.5
    got.loc[300, "logs"] = float(ref.loc[300, "logs"])
    check_output(got, 750, base_predictions)
    assert not parts.exists()
    assert len(text) == end and records == 751


def _predict_cli(capsys, *args: str) -> tuple[int, str]:
    """``molprop predict`` in this process -> (exit code, stderr)."""
    code = main(["predict", "--no-progress", *args])
    return code, capsys.readouterr().err


def test_output_equal_to_input_is_refused(tiny_model, base, work, capsys) -> None:
    source = write_input(work / "same.csv", base, 20)
    before = source.read_bytes()
    link = work / "same_link.csv"
    link.unlink(missing_ok=True)
    link.symlink_to(source)
    for output in (str(source), str(work / "." / "same.csv"), str(link)):
        code, err = _predict_cli(
            capsys, "--model", str(tiny_model), "--input", str(source), "--output", output
        )
        assert code == 2 and "would overwrite the input" in err
    assert source.read_bytes() == before


def test_failed_run_keeps_the_existing_output(
    tiny_model, base, base_predictions, work, capsys
) -> None:
    """A ragged row (a trailing comma) at line 702 stops the run after several chunks were
    predicted: the error names the line, the earlier output is untouched, the rows so far are
    in ``<output>.partial``; the next good run replaces the output and removes the partial."""
    source = write_input(work / "ragged.csv", base, 1000)
    lines = source.read_text().split("\n")
    line = next(i for i in range(701, 720) if lines[i].count(",") == 2)  # not a quoted note
    lines[line] += ","
    source.write_text("\n".join(lines))
    out = work / "ragged_out.csv"
    out.write_text("the previous predictions\n")
    staged = partial_path(out)
    code, err = _predict_cli(
        capsys,
        "--model",
        str(tiny_model),
        "--input",
        str(source),
        "--output",
        str(out),
        "--chunk-size",
        "100",
    )
    assert code == 2
    assert f"line {line + 1}: 4 fields but the header has 3" in err
    assert out.read_text() == "the previous predictions\n"
    written = complete_records(staged)[0] - 1
    assert 0 < written < line
    lines[line] = lines[line][:-1]
    source.write_text("\n".join(lines))
    code, err = _predict_cli(
        capsys,
        "--model",
        str(tiny_model),
        "--input",
        str(source),
        "--output",
        str(out),
        "--chunk-size",
        "100",
    )
    assert code == 0, err
    check_output(read_out(out), 1000, base_predictions)
    assert not staged.exists()


def test_blank_lines_and_whitespace_smiles_come_back_as_rows(tiny_model, work, capsys) -> None:
    source = work / "blank.csv"
    source.write_text("smiles\nCCO\n\nc1ccccc1 O\n   \nCC\tO\n  c1ccccc1O \n\n")
    out = work / "blank_out.csv"
    code, err = _predict_cli(
        capsys, "--model", str(tiny_model), "--input", str(source), "--output", str(out)
    )
    assert code == 0, err
    got = pd.read_csv(out, keep_default_na=False)
    assert got["status"].tolist() == [
        "ok",
        "invalid_input",
        "invalid_input",
        "invalid_input",
        "invalid_input",
        "ok",
        "invalid_input",
    ]
    errors = got["error"].tolist()
    assert "empty" in errors[1] and "empty" in errors[3] and "empty" in errors[6]
    assert "whitespace" in errors[2] and "whitespace" in errors[4]
    expect = Predictor.from_pretrained(tiny_model).predict(["CCO", "c1ccccc1O"])
    np.testing.assert_allclose(got["logs"][[0, 5]].astype(float), expect["logs"], rtol=1e-5)
    assert (got["logs"][[1, 2, 3, 4, 6]] == "").all()


def test_in_domain_needs_the_training_size_range(tiny_model, base, work) -> None:
    """With a domain fitted on ESOL rows, a 999-carbon chain (Morgan similarity 1.0 to
    tetradecane) is predicted but not in domain."""
    import shutil

    model = work / "model_with_domain"
    shutil.copytree(tiny_model, model, dirs_exist_ok=True)
    add_domain_to_artifact(model, [s for s in base if s != INVALID])
    out = Predictor.from_pretrained(model).predict(["C" * 999, "CCCCCCCCCCCCCC", "c1ccccc1O"])
    assert out["status"].tolist() == ["ok", "ok", "ok"]
    assert out["in_domain"].tolist() == [False, True, True]
