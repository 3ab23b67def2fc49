"""The benchmarks' one entry point (``python -m benchmarks``, :mod:`benchmarks.targets`): every
benchmark module is a target, and every target backs a page that names it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from benchmarks.targets import BENCH, HELPERS, REPO, TARGETS, Target


def test_every_benchmark_module_and_script_is_a_target_or_a_helper() -> None:
    sources = {t.source.name for t in TARGETS}
    files = {p.name for p in BENCH.glob("*.py")} | {p.name for p in BENCH.glob("*.sh")}
    helpers = {f"{name}.py" for name in HELPERS}
    assert files - helpers == sources, (sorted(files - helpers - sources), sorted(sources - files))
    assert len({t.name for t in TARGETS}) == len(TARGETS)


def cited(target: Target, page: str) -> bool:
    """``page`` names the target: its module or script as a word, or ``benchmarks NAME``."""
    text = (REPO / page).read_text(encoding="utf-8")
    module = target.script or target.module or target.name
    return bool(re.search(rf"(?<!\w){re.escape(module)}\b", text)) or (
        f"benchmarks {target.name}" in text
    )


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_every_target_backs_a_page_that_names_it(target: Target) -> None:
    assert target.backs, target.name
    for page in target.backs:
        assert (REPO / page).is_file(), page
        assert cited(target, page), f"{page} does not name {target.name}"
        assert target.summary, target.name


def test_the_citation_check_fails_for_a_page_that_does_not_name_the_target() -> None:
    assert not cited(Target("core_sweep", "g", ()), "docs/results/scale.md")
    assert not cited(Target("sweep", "g", ()), "docs/results/core.md")  # only inside core_sweep
    assert cited(Target("core_sweep", "g", ()), "docs/results/core.md")


def _benchmarks(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_list_names_every_target_and_its_pages_and_names_run_one() -> None:
    done = _benchmarks("--list")
    assert done.returncode == 0, done.stderr
    for target in TARGETS:
        assert re.search(rf"^  {target.name} ", done.stdout, re.M), target.name
    assert "docs/results/core.md" in done.stdout
    run = _benchmarks("splits", "--help")  # the module's own command line
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: ") and "--seeds" in run.stdout
    unknown = _benchmarks("no_such_benchmark")
    assert unknown.returncode == 2 and "--list" in unknown.stderr
