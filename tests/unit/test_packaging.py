"""``pip install molprop`` predicts, trains, fine-tunes, embeds and explains; the service, the
hyperparameter search, ONNX and PyG are extras (pyproject.toml).

What the core commands load is read from the source (the module-level imports, followed from
module to module) and checked by running them with the extras made unimportable; a command that
needs an extra imports it inside its ``run`` and names the extra when it is missing
(:func:`molprop.cli.extras.require_extra`).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import pytest

from molprop.cli.extras import EXTRAS
from tests.unit.test_architecture import _absolute, _face_names, _module_files, _name_home

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]

#: subcommands that need an extra (each checks for it in its ``run``)
EXTRA_VERBS = {"worker": "service", "hpopt": "hpopt", "export": "onnx"}
#: what no core command may load
EXTRA_MODULES = sorted({m for modules in EXTRAS.values() for m in modules} | {"starlette"})
#: distribution name -> import name, where they differ
IMPORT_NAMES = {
    "scikit-learn": "sklearn",
    "pydantic-settings": "pydantic_settings",
    "python-multipart": "multipart",
    "markdown-it-py": "markdown_it",
    "optuna-integration": "optuna_integration",
}


def _import_name(requirement: str) -> str:
    """``"psycopg[binary]>=3.1"`` -> ``"psycopg"``; ``"scikit-learn>=1.4"`` -> ``"sklearn"``."""
    name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
    return IMPORT_NAMES.get(name, name.lower().replace("-", "_"))


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


# --------------------------------------------------------------------------- the import graph


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed_imports(
    tree: ast.Module, module_level: bool
) -> Iterable[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree``: with ``module_level`` only those that run when the
    module is imported (not inside a function, not under ``if TYPE_CHECKING:``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if module_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        children = list(ast.iter_child_nodes(node))
        if module_level and isinstance(node, ast.If) and _is_type_checking(node):
            children = node.orelse
        stack.extend(children)


@functools.lru_cache(maxsize=4)
def import_edges(
    root: Path, tops: tuple[str, ...] = ("molprop",)
) -> tuple[dict[str, Path], dict[tuple[str, bool], dict[str, int]]]:
    """(module -> file, (module, module_level) -> {what it imports: line}).

    A target is a module of the tree (resolved as in ``test_architecture.import_graph``,
    together with the packages above it, whose ``__init__`` runs first) or the top-level name
    of a module outside it (``numpy``, ``sqlalchemy``)."""
    modules = _module_files(root, tops)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in modules.items()}
    faces = _face_names(modules, trees)
    edges: dict[tuple[str, bool], dict[str, int]] = {}
    for module, tree in trees.items():
        is_package = modules[module].name == "__init__.py"
        for module_level in (True, False):
            out = edges.setdefault((module, module_level), {})
            for node in _executed_imports(tree, module_level):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                else:
                    source = _absolute(module, is_package, node)
                    if source in modules:
                        targets = [_name_home(modules, faces, source, a.name) for a in node.names]
                    else:
                        targets = [source]
                for target in targets:
                    parts = target.split(".")
                    if parts[0] not in tops:
                        out.setdefault(parts[0], node.lineno)
                        continue
                    for n in range(1, len(parts) + 1):  # the packages above it run first
                        name = ".".join(parts[:n])
                        if name in modules and name != module:
                            out.setdefault(name, node.lineno)
    return modules, edges


def loaded_outside(
    root: Path, starts: dict[str, bool], tops: tuple[str, ...] = ("molprop",)
) -> dict[str, list[str]]:
    """Top-level name of every module outside ``tops`` that importing ``starts`` loads ->
    the chain that loads it (``file:line`` steps). ``starts`` maps a module to whether only its
    module-level imports count (False: every import in it, as running its functions would);
    from there on only module-level imports are followed."""
    modules, edges = import_edges(root, tops)
    seen: dict[str, list[str]] = {}
    chain: dict[str, list[str]] = {}
    queue = deque()
    for module, module_level in starts.items():
        parts = module.split(".")  # the packages above it run first
        for n in range(1, len(parts)):
            if ".".join(parts[:n]) in modules:
                chain.setdefault(".".join(parts[:n]), [])
                queue.append((".".join(parts[:n]), True))
        chain[module] = []
        queue.append((module, module_level))
    while queue:
        module, module_level = queue.popleft()
        for target, line in edges[(module, module_level)].items():
            step = [*chain[module], f"{modules[module].relative_to(root)}:{line}"]
            if target not in modules:
                seen.setdefault(target, step)
            elif target not in chain:
                chain[target] = step
                queue.append((target, True))
    return seen


def _subcommands() -> dict[str, str]:
    from molprop.cli import main

    extra = {
        "pretrain": "molprop.cli.pretrain",
        "finetune": "molprop.cli.finetune",
        "split-fidelity": "molprop.cli.split_fidelity",
        "transfer-benchmark": "molprop.cli.transfer_benchmark",
    }
    assert set(main._optional_subcommands()) <= set(extra)
    return {**main.SUBCOMMANDS, **extra}


def _bad(found: dict[str, list[str]], allowed: set[str] | None = None) -> list[str]:
    """``name via chain`` for each extra module in ``found`` (or, with ``allowed``, each module
    that is neither in it nor in the standard library)."""
    if allowed is None:
        names = [n for n in found if n in EXTRA_MODULES]
    else:
        names = [n for n in found if n not in allowed and n not in sys.stdlib_module_names]
    return [f"{n} via {' -> '.join(found[n])}" for n in sorted(names)]


def core_starts() -> dict[str, dict[str, bool]]:
    """What each core entry point runs: ``molprop`` with any subcommand (the parser imports
    every subcommand module), each core subcommand's ``run`` and the inference package."""
    commands = _subcommands()
    starts = {
        "molprop --help": {"molprop.cli.main": True, **dict.fromkeys(commands.values(), True)}
    }
    for verb, module in commands.items():
        if verb not in EXTRA_VERBS:
            starts[f"molprop {verb}"] = {"molprop.cli.main": True, module: False}
    inference = [m for m in _module_files(ROOT, ("molprop",)) if m.startswith("molprop.inference")]
    starts["molprop.inference"] = dict.fromkeys(["molprop", *inference], True)
    return starts


@pytest.mark.parametrize("entry", list(core_starts()))
def test_core_commands_load_no_extra(entry: str) -> None:
    assert _bad(loaded_outside(ROOT, core_starts()[entry])) == []


@pytest.mark.parametrize("entry", list(core_starts()))
def test_core_commands_load_only_the_core_dependencies(entry: str) -> None:
    core = {_import_name(r) for r in _project()["dependencies"]}
    assert _bad(loaded_outside(ROOT, core_starts()[entry]), allowed=core) == []


def test_the_check_sees_a_planted_extra_import(tmp_path: Path) -> None:
    """A module-level import of an extra two modules away from a command is found, with the
    chain; an import inside a function of a module below the command, one under
    ``TYPE_CHECKING``, and one inside the command's own function (an extra command) are not."""
    files = {
        "__init__.py": "",
        "cli/__init__.py": "",
        "cli/predict.py": "def run():\n    from molprop.inference.predictor import Predictor\n",
        "cli/hpopt.py": "def run():\n    import optuna\n",
        "inference/__init__.py": "from molprop.inference.predictor import Predictor\n",
        "inference/predictor.py": (
            "from typing import TYPE_CHECKING\nimport numpy\nfrom molprop.store import db\n"
            "if TYPE_CHECKING:\n    import fastapi\n\ndef onnx():\n    import onnxruntime\n"
        ),
        "store/__init__.py": "",
        "store/db.py": "import json\n\nclass Table:\n    from sqlalchemy import orm\n",
    }
    for name, text in files.items():
        (tmp_path / "molprop" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "molprop" / name).write_text(text)
    found = loaded_outside(tmp_path, {"molprop.cli.predict": False})
    assert _bad(found) == [
        "sqlalchemy via molprop/cli/predict.py:2 -> molprop/inference/predictor.py:3 "
        "-> molprop/store/db.py:4"
    ]
    assert _bad(found, allowed={"numpy"}) == [_bad(found)[0]]
    assert sorted(found) == ["json", "numpy", "sqlalchemy", "typing"]
    assert loaded_outside(tmp_path, {"molprop.cli.hpopt": True}) == {}
    assert list(loaded_outside(tmp_path, {"molprop.cli.hpopt": False})) == ["optuna"]


# --------------------------------------------------------------------------- pyproject.toml


def test_the_extras_are_what_pyproject_declares() -> None:
    """``molprop.cli.extras.EXTRAS`` lists each extra's modules; none is a core dependency, and
    ``api`` is the same as ``service``."""
    project = _project()
    declared = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        assert {_import_name(r) for r in declared[extra]} == set(modules), extra
    assert declared["api"] == ["molprop[service]"]
    core = {_import_name(r) for r in project["dependencies"]}
    assert not core & set(EXTRA_MODULES), core & set(EXTRA_MODULES)
    assert "torch==2.13.0" in project["dependencies"]


def test_make_install_and_the_image_install_the_extras_they_need() -> None:
    makefile = (ROOT / "Makefile").read_text()
    (install,) = re.findall(r'pip install -q -e "\.\[([a-z,]+)\]"\n\ttouch', makefile)
    assert set(install.split(",")) >= {*EXTRAS, "notebooks", "dev"}, install
    assert 'RUN pip install ".[service]"' in (ROOT / "Dockerfile").read_text()


# --------------------------------------------------------------------------- run without extras

#: runs molprop's console entry in one process with every extra module unimportable (the
#: argv lists come as JSON); prints one line ``RESULT {...}``: each command's exit code and last
#: stderr line, and which of the blocked modules got loaded all the same
BLOCKED_RUN = """
import contextlib, io, json, sys
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None  # `import name` now raises ModuleNotFoundError
from molprop.cli.main import main
out = []
for argv in json.loads(sys.argv[2]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    lines = err.getvalue().strip().splitlines()
    out.append({"argv": argv, "code": code, "stderr": lines[-1] if lines else ""})
loaded = sorted(m for m in json.loads(sys.argv[1]) if sys.modules.get(m) is not None)
print("RESULT", json.dumps({"commands": out, "loaded": loaded}))
"""


def test_core_commands_run_without_the_extras_and_extra_commands_name_theirs(
    tmp_path: Path, esol_frame
) -> None:
    """With every extra unimportable: predict, train, fine-tune and embed run; hpopt, worker
    and export stop with exit code 2 and the install line of their extra."""
    esol_frame.head(40).to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "in.csv").write_text("smiles\nCCO\nc1ccccc1O\nnot a smiles\n")
    data = ["--data", str(tmp_path / "train.csv"), "--target-columns", "logp"]
    fast = ["--epochs", "1", "--no-progress", "--split-type", "random"]
    commands = [
        ["predict", "--model", "solubility", "--input", str(tmp_path / "in.csv")]
        + ["--output", str(tmp_path / "out.csv"), "--no-progress"],
        ["embed", "--model", "solubility", "--input", str(tmp_path / "in.csv")]
        + ["--output", str(tmp_path / "emb.csv")],
        ["train", *data, *fast, "--out", str(tmp_path / "trained")],
        ["finetune", "--from", "solubility", *data, *fast, "--out", str(tmp_path / "tuned")],
        ["hpopt", *data, "--out", str(tmp_path / "hpopt")],
        ["worker", "--exit-when-idle", "--database-url", f"sqlite:///{tmp_path / 'jobs.db'}"],
        ["export", "--model", "solubility", "--out", str(tmp_path / "onnx")],
    ]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, json.dumps(EXTRA_MODULES), json.dumps(commands)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["loaded"] == []
    by_verb = {r["argv"][0]: r for r in result["commands"]}
    for verb in ("predict", "embed", "train", "finetune"):
        assert by_verb[verb]["code"] == 0, by_verb[verb]
    for verb, extra in EXTRA_VERBS.items():
        assert by_verb[verb]["code"] == 2, by_verb[verb]
        assert f'pip install "molprop[{extra}]"' in by_verb[verb]["stderr"], by_verb[verb]
    assert (tmp_path / "trained" / "config.json").is_file()
    assert (tmp_path / "tuned" / "config.json").is_file()
