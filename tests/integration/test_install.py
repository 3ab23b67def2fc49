"""``pip install .`` (a wheel, not editable) gives a package that finds its shipped models.

The wheel is built from a copy of the tree (``--no-build-isolation``: nothing is downloaded),
installed with ``--target`` into a fresh directory and run from another directory with only that
directory on ``PYTHONPATH`` (this interpreter supplies the dependencies).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: what the build needs: the packages, the shipped models, the metadata
SOURCES = ("pyproject.toml", "README.md", "molprop", "api", "pretrained")
SMILES = ["CCO", "c1ccccc1O", "not a smiles"]

#: run in the installed package: where it was imported from, where it found the models, and
#: its predictions by name next to those of the repository's artifact directory
PROBE = """
import json, sys
import molprop
from molprop.artifact.resolve import (
    available_models, available_panels, resolve_model, shipped_models_dir,
)
from molprop.inference import Predictor

smiles = json.loads(sys.argv[1])
by_name = Predictor.from_pretrained("solubility").predict(smiles)
by_path = Predictor.from_pretrained(sys.argv[2]).predict(smiles)
print(json.dumps({
    "molprop": molprop.__file__,
    "shipped": str(shipped_models_dir()),
    "solubility": str(resolve_model("solubility")),
    "models": available_models(),
    "panels": available_panels(),
    "by_name": by_name.to_dict(orient="list"),
    "by_path": by_path.to_dict(orient="list"),
}))
"""


def _pip(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"


def build_wheel(source: Path, out: Path) -> Path:
    """A copy of the tree's build inputs in ``source`` -> the wheel in ``out``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    _pip(
        "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), ".", cwd=source
    )
    (wheel,) = out.glob("molprop-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, install directory)"""
    tmp = tmp_path_factory.mktemp("install")
    wheel = build_wheel(tmp / "src", tmp / "dist")
    target = tmp / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=tmp)
    return wheel, target


def _env(target: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MOLPROP_MODEL_DIR", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1", "MOLPROP_NO_PROGRESS": "1"}


def _run(args: list[str], target: Path, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=_env(target), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_wheel_holds_every_module_and_only_what_serving_reads(installed: tuple[Path, Path]):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("molprop", "api"):  # the explicit package list in pyproject.toml is complete
        for path in (ROOT / package).rglob("*.py"):
            assert path.relative_to(ROOT).as_posix() in names, f"{path} missing from the wheel"
    for folder in ("api/templates", "api/static"):  # the web page's files (package data)
        for path in (ROOT / folder).rglob("*"):
            if path.is_file():
                assert path.relative_to(ROOT).as_posix() in names, f"{path} missing from the wheel"
    for model in (ROOT / "pretrained").glob("*/config.json"):
        shipped = model.parent
        for path in shipped.rglob("*"):
            if path.is_file() and path.name != "split.csv":
                name = f"molprop/pretrained/{path.relative_to(ROOT / 'pretrained').as_posix()}"
                assert name in names, f"{name} missing from the wheel"
    for panel in (ROOT / "pretrained" / "panels").glob("*.json"):  # panel files beside them
        assert f"molprop/pretrained/panels/{panel.name}" in names, f"{panel} missing from the wheel"
    assert "molprop/pretrained/__init__.py" in names
    assert not [n for n in names if n.endswith("split.csv")]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "molprop = molprop.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_finds_and_runs_its_shipped_models(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, target = installed
    repo_model = ROOT / "pretrained" / "solubility"
    done = _run(
        [sys.executable, "-c", PROBE, json.dumps(SMILES), str(repo_model)], target, tmp_path
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(probe["molprop"]).is_relative_to(target)  # not the repository's molprop
    assert Path(probe["shipped"]) == (target / "molprop" / "pretrained").resolve()
    assert Path(probe["solubility"]).is_relative_to(target.resolve())
    assert probe["models"] == sorted(p.parent.name for p in ROOT.glob("pretrained/*/config.json"))
    assert probe["panels"] == sorted(p.stem for p in ROOT.glob("pretrained/panels/*.json"))
    assert probe["by_name"] == probe["by_path"]  # same model, same numbers
    from molprop.inference import Predictor  # the repository's code and artifact, here

    here = Predictor.from_pretrained(repo_model).predict(SMILES)
    assert probe["by_name"]["logS"][:2] == pytest.approx(here["logS"].tolist()[:2], abs=1e-6)
    assert probe["by_name"]["status"] == ["ok", "ok", "invalid_input"]

    # the installed console script `molprop`, by model name, from another directory
    (tmp_path / "in.csv").write_text("smiles\n" + "\n".join(SMILES) + "\n")
    _run(
        [str(target / "bin" / "molprop"), "predict", "--model", "solubility"]
        + ["--input", "in.csv", "--output", "out.csv", "--no-progress"],
        target,
        tmp_path,
    )
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert out["smiles"].tolist() == SMILES and out["status"].tolist() == probe["by_name"]["status"]
    logs = [float(v) for v in out["logS"].tolist()[:2]]
    assert logs == pytest.approx(probe["by_name"]["logS"][:2], abs=1e-6)
    # the shipped panel, by name, from the installed package
    _run(
        [str(target / "bin" / "molprop"), "predict", "--model", "admet"]
        + ["--input", "in.csv", "--output", "panel.csv", "--no-progress"],
        target,
        tmp_path,
    )
    panel = pd.read_csv(tmp_path / "panel.csv", keep_default_na=False)
    assert panel["status"].tolist() == probe["by_name"]["status"]
    ok = [i for i, status in enumerate(probe["by_name"]["status"]) if status == "ok"]
    for target in ("solubility_aqsoldb", "bbb_b3db", "tox21_sr_p53", "tpsa"):
        assert all(panel[target][i] != "" for i in ok), target  # every model of the panel
