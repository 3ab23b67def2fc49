"""The code examples of the README and the documentation site cannot go stale:

* every ``python`` block runs (a fresh interpreter, in a temporary directory, shipped models);
* every ``curl`` command runs against a real uvicorn process serving the shipped models, with a
  real job worker, in the order written (a job id written ``3f2c...`` is the one the block's
  last submission returned; uploaded files are made from ESOL rows with the columns the command
  names); it must answer the status the text around it says (2xx unless it names another code)
  and, where a sample response follows in comments, contain every key of the sample (the
  shape);
* every ``molprop`` command line parses with the current CLI (its subcommand, flags and
  choices exist), without running it: most train models for minutes.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from tests.api.conftest import uvicorn_server

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[tuple[str, str]]:
    """(page:line, code) of every fenced block in ``language``."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == language:
                line = text[: m.start()].count("\n") + 1
                found.append((f"{page.relative_to(ROOT)}:{line}", m.group(2)))
    return found


def commands(code: str) -> Iterator[tuple[str, list[str]]]:
    """(command, the comment lines right after it) of a shell block; ``\\`` continues a line,
    a trailing ``# ...`` is kept as the command's first comment."""
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        command, _, trailing = line.partition("  #")
        comments = [trailing.strip()] if trailing else []
        while i < len(lines) and lines[i].strip().startswith("#"):
            comments.append(lines[i].strip().lstrip("#").strip())
            i += 1
        yield command.strip(), comments


PYTHON = blocks("python")
SHELL = blocks("bash")


def test_the_pages_have_examples() -> None:
    assert len(PYTHON) >= 4 and len(SHELL) >= 15
    assert sum("curl " in code for _, code in SHELL) >= 4


@pytest.mark.parametrize("where,code", PYTHON, ids=[w for w, _ in PYTHON])
def test_python_example_runs(where: str, code: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, f"{where}:\n{code}\n{done.stderr[-3000:]}"


MOLPROP = [
    (where, command)
    for where, code in SHELL
    for command, _ in commands(code)
    if command.startswith("molprop ")
]


@pytest.mark.parametrize("where,command", MOLPROP, ids=[w for w, _ in MOLPROP])
def test_molprop_command_parses(
    where: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from molprop.cli.main import build_parser

    text = re.sub(r"\$\([^)]*\)|\$RANDOM", "1", command.split(" | ")[0].split(" > ")[0])
    argv = [a.replace("...", "x") for a in shlex.split(text.removesuffix("&"))[1:]]
    monkeypatch.chdir(tmp_path)
    for arg in argv:  # a JSON file the command reads (a preset): an earlier step wrote it
        if arg.endswith(".json") and "/" in arg:
            (tmp_path / arg).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / arg).write_text('{"model": {}, "train": {}}')
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: `{command}` does not parse with today's CLI (exit {exc.code})")


def _upload(path: Path, command: str) -> None:
    """A CSV for ``-F file=@path`` with the columns the command names (ESOL rows)."""
    esol = pd.read_csv(ROOT / "data" / "moleculenet" / "delaney_chemprop.csv.gz").head(24)
    frame = pd.DataFrame({"smiles": esol["smiles"], "name": [f"m{i}" for i in range(24)]})
    for field in re.findall(r"-F (\w+_column)=(\"[^\"]+\"|\S+)", command):
        column = field[1].strip('"')
        frame[column] = esol["logp"] if "target" in field[0] else esol["smiles"]
    frame.to_csv(path, index=False)


def _expected_status(comments: list[str]) -> tuple[int | None, int | None]:
    """(the status code the text says, ``(204)``; an alternative it names for another state of
    the job, ``409 before`` / ``409 once ended``); None, None: any 2xx."""
    for comment in comments[:1]:
        m = re.search(r"\((\d{3})\)", comment)
        if m:
            return int(m.group(1)), None
        m = re.search(r"\b(\d{3}) (?:before|once)", comment)
        if m:
            return None, int(m.group(1))
    return None, None


def _keys(comments: list[str]) -> set[str]:
    sample = " ".join(c for c in comments if '"' in c and ":" in c)
    return set(re.findall(r'"(\w+)":', sample))


def _all_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _all_keys(v)}
    return set()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("docs-live")
    with uvicorn_server(ROOT / "pretrained", root / "server.log", data_dir=str(root / "data")) as b:
        yield b


CURL = [(where, code) for where, code in SHELL if "curl " in code]


@pytest.mark.parametrize("where,code", CURL, ids=[w for w, _ in CURL])
def test_curl_examples_answer_as_documented(
    where: str, code: str, live: str, tmp_path: Path
) -> None:
    job = None
    for command, comments in commands(code):
        if not command.startswith("curl "):
            continue
        unpublished = False
        if job is not None and "/results" in command:
            _wait_for(live, job)  # "when done": the examples show the finished job's rows
        if job is not None and "DELETE" in command and "/v1/models/" in command:
            done = _wait_for(live, job)  # a model is published when its fine-tune job is done
            unpublished = done.get("published") is False  # it lost to the mean predictor
        text = command.replace("localhost:8000", live).replace("3f2c...", job or "none")
        for name in re.findall(r"file=@(\S+)", text):
            _upload(tmp_path / name, text)
        argv = shlex.split(text)
        argv[1:1] = ["-w", "\n%{http_code}"]
        out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{where}: {command}\n{out.stderr}"
        written = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-o"]
        body, _, status = out.stdout.rpartition("\n")
        want, other = (404, None) if unpublished else _expected_status(comments)
        if want is None:
            ok = 200 <= int(status) < 300 or int(status) == other
            assert ok, f"{where}: {command} -> {status} {body[:500]}"
        else:
            assert int(status) == want, f"{where}: {command} -> {status} {body[:500]}"
        if written or not body.strip().startswith(("{", "[")):
            continue
        answer = json.loads(body)
        missing = _keys(comments) - _all_keys(answer)
        assert not missing, f"{where}: {command}: keys {sorted(missing)} not in {body[:500]}"
        if isinstance(answer, dict) and "kind" in answer and "id" in answer:
            job = answer["id"]


def _wait_for(base: str, job: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = httpx.get(f"{base}/v1/jobs/{job}", timeout=10).json()
        if info["status"] in {"done", "failed", "cancelled"}:
            assert info["status"] == "done", info
            return info
        time.sleep(1)
    pytest.fail(f"job {job} not done in {timeout} s")
