"""The package layers (docs/ARCHITECTURE.md): data flows one way, inference never needs training.

``LAYERS`` lists molprop's packages from the bottom up; a module may import its own package and
packages below it, never one above. Every import in the source is checked, including imports
inside functions (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: bottom -> top. Modules in one entry may import each other.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "graph"),
    ("chem",),
    ("featurize",),
    ("io",),
    ("corpus",),
    ("jobstore",),
    ("data",),
    ("nn",),
    ("models",),
    ("artifact",),
    ("inference",),
    ("training",),
    ("transfer",),
    ("jobs",),
    ("cli", "pretrained_recipes", "pretrained_admet", "__init__"),
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
#: what the service may use of molprop
API_ALLOWED = {"inference", "artifact", "errors", "jobstore"}
#: the only inference module allowed to use Lightning (multi-device prediction)
LIGHTNING_IN_INFERENCE = {"molprop.inference.distributed"}


def _part(module: str) -> str | None:
    """``molprop.io.table`` -> ``io``; ``molprop`` -> ``__init__``; non-molprop -> None."""
    parts = module.split(".")
    if parts[0] != "molprop":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            # ``from molprop import training`` imports a sub-package
            if mod == "molprop":
                out += [
                    (node.lineno, f"molprop.{alias.name}")
                    for alias in node.names
                    if (ROOT / "molprop" / alias.name).is_dir()
                    or (ROOT / "molprop" / f"{alias.name}.py").is_file()
                ]
    return out


def _modules(top: str):
    for path in sorted((ROOT / top).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts)


def layer_violations(top: str = "molprop") -> list[str]:
    problems = []
    for path, module in _modules(top):
        own = _part(module)
        for line, target in _imports(
            path, module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        ):
            if top == "molprop":
                dep = _part(target)
                if dep is None or dep == own:
                    if target.split(".")[0] == "lightning" and own == "inference":
                        if module not in LIGHTNING_IN_INFERENCE:
                            problems.append(
                                f"{path.relative_to(ROOT)}:{line} inference imports {target}"
                            )
                    continue
                if dep not in RANK or own not in RANK:
                    problems.append(f"{path.relative_to(ROOT)}:{line} unknown layer for {target}")
                elif RANK[dep] > RANK[own]:
                    problems.append(
                        f"{path.relative_to(ROOT)}:{line} {own} (layer {RANK[own]}) imports "
                        f"{target} (layer {RANK[dep]})"
                    )
            else:  # the service
                dep = _part(target)
                if dep is not None and dep not in API_ALLOWED:
                    problems.append(f"{path.relative_to(ROOT)}:{line} api imports {target}")
    return problems


def test_every_molprop_package_has_a_layer():
    packages = {p.name for p in (ROOT / "molprop").iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "molprop").glob("*.py")}
    assert packages | modules <= set(RANK), sorted((packages | modules) - set(RANK))


def test_no_module_imports_a_layer_above_it():
    assert layer_violations("molprop") == []


def test_service_uses_only_inference_and_artifact():
    assert layer_violations("api") == []


def test_the_service_never_loads_the_job_worker_or_training():
    """The API runs jobs through ``molprop worker`` processes: importing the app loads neither
    ``molprop.jobs`` (which fine-tunes) nor training code."""
    code = (
        "import sys, api.main\n"
        "bad = sorted(m for m in sys.modules if m == 'lightning' or m.startswith(("
        "'molprop.jobs.', 'molprop.training', 'molprop.transfer', 'lightning.')) "
        "or m == 'molprop.jobs')\n"
        "print(bad)\n"
    )
    env = {**os.environ, "MOLPROP_JOB_WORKERS": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_checker_sees_a_planted_upward_import(tmp_path, monkeypatch):
    """The check must fail when inference imports training."""
    fake = tmp_path / "molprop" / "inference"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "bad.py").write_text("def f():\n    from molprop.training.fit import fit_member\n")
    (fake / "lit.py").write_text("import lightning\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = layer_violations("molprop")
    assert any("inference (layer 10) imports molprop.training.fit" in p for p in found), found
    assert any("inference imports lightning" in p for p in found), found


def strategy_names_in_artifact(root: Path = ROOT) -> list[str]:
    """Lines of ``molprop/artifact/`` (code and card templates) that name a fine-tuning
    strategy as a quoted string. artifact sits below transfer: what it says of a strategy comes
    from what the fine-tune recorded in the model, never from the strategy's name."""
    from molprop.transfer import STRATEGIES

    names = "|".join(re.escape(name) for name in STRATEGIES)
    quoted = re.compile(rf"""(["'])({names})\1""")
    found = []
    for path in sorted((root / "molprop" / "artifact").rglob("*")):
        if path.suffix not in (".py", ".j2"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            match = quoted.search(line)
            if match:
                found.append(f"{path.relative_to(root)}:{i} names the strategy {match[2]!r}")
    return found


def test_the_artifact_layer_names_no_fine_tuning_strategy():
    assert strategy_names_in_artifact() == []


def test_the_strategy_name_check_sees_planted_names(tmp_path):
    templates = tmp_path / "molprop" / "artifact" / "templates"
    templates.mkdir(parents=True)
    (templates / "card.md.j2").write_text('{% if prov.strategy == "delta-measured" %}\n')
    (templates.parent / "card.py").write_text("FULL = 'full'\nDELTA_TEXT = 'delta learning'\n")
    assert strategy_names_in_artifact(tmp_path) == [
        "molprop/artifact/card.py:1 names the strategy 'full'",
        "molprop/artifact/templates/card.md.j2:1 names the strategy 'delta-measured'",
    ]


# --------------------------------------------------------------------------- import loops


def _module_files(root: Path, tops: Sequence[str]) -> dict[str, Path]:
    """Dotted module name -> file of every module under ``tops`` (a package is its
    ``__init__.py``, named as the package)."""
    out = {}
    for top in tops:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, relative imports resolved against ``module``."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _face_names(
    modules: dict[str, Path], trees: dict[str, ast.Module]
) -> dict[str, dict[str, tuple[str, str]]]:
    """Per package (``__init__.py``): the names it takes at module level from a module of the
    tree, each with (that module, the name there): what the package hands on."""
    faces: dict[str, dict[str, tuple[str, str]]] = {}
    for module, path in modules.items():
        if path.name != "__init__.py":
            continue
        for node in trees[module].body:
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module, True, node)
                if source in modules:
                    for alias in node.names:
                        faces.setdefault(module, {})[alias.asname or alias.name] = (
                            source,
                            alias.name,
                        )
    return faces


def _name_home(
    modules: dict[str, Path],
    faces: dict[str, dict[str, tuple[str, str]]],
    source: str,
    name: str,
) -> str:
    """The module ``from source import name`` depends on: the submodule ``source.name`` if
    there is one; else, where ``source`` is a package handing the name on, the module it takes
    it from (followed through packages); else ``source`` itself."""
    seen = set()
    while (source, name) not in seen:
        seen.add((source, name))
        if f"{source}.{name}" in modules:
            return f"{source}.{name}"
        if name not in faces.get(source, {}):
            return source
        source, name = faces[source][name]
    return source


def import_graph(root: Path, tops: Sequence[str] = ("molprop", "api")) -> dict[str, dict[str, int]]:
    """module -> {module it imports: first line}, over every module under ``tops``.

    Every ``import`` and ``from ... import`` statement counts wherever it stands: at module
    level, inside a function (a lazy import is still a dependency) or under
    ``if TYPE_CHECKING:`` (a type is a dependency too). Relative imports are resolved.

    * ``import a.b.c``: an edge to ``a.b.c``.
    * ``from a.b import name``: an edge to the submodule ``a.b.name`` if there is one; else, if
      ``a.b`` is a package whose ``__init__.py`` takes ``name`` from one of its modules
      (``from a.b.c import name``), an edge to that module (followed through packages that
      hand the name on); else an edge to ``a.b`` (a name it defines itself). So a package's
      ``__init__`` that re-exports its submodules' names makes no false loop with them, while
      a submodule using a name its package's ``__init__`` defines, when that ``__init__``
      imports the submodule, is a real loop and is reported.
    * Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` first; that is no edge.

    Modules outside ``tops`` (the standard library, third parties) are left out.
    """
    modules = _module_files(root, tops)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in modules.items()}
    faces = _face_names(modules, trees)
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, tree in trees.items():
        is_package = modules[module].name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, is_package, node)
                if source in modules:
                    targets = [_name_home(modules, faces, source, a.name) for a in node.names]
            for target in targets:
                if target in modules and target != module:
                    graph[module].setdefault(target, node.lineno)
    return graph


def _strong_components(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _shortest_loop(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """The shortest loop through the component's first module, inside the component."""
    start, inside = component[0], set(component)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if w in inside and w not in parent:
                    parent[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"no loop through {start}")


def import_loops(root: Path, tops: Sequence[str] = ("molprop", "api")) -> list[str]:
    """One line per set of modules that import each other: the modules, then the shortest
    loop through the first as ``file:line -> file:line -> ... -> file`` (each file imports the
    next at that line)."""
    graph = import_graph(root, tops)
    files = _module_files(root, tops)
    out = []
    for component in _strong_components(graph):
        if len(component) < 2:
            continue
        loop = _shortest_loop(graph, component)
        steps = [f"{files[a].relative_to(root)}:{graph[a][b]}" for a, b in zip(loop, loop[1:])]
        out.append(
            f"{len(component)} modules ({', '.join(component)}): "
            + " -> ".join([*steps, str(files[loop[-1]].relative_to(root))])
        )
    return out


def test_no_import_loops_in_molprop_or_the_service():
    """No module of ``molprop/`` or ``api/`` imports itself through others (every import
    counted, see :func:`import_graph`): imports run one way."""
    loops = import_loops(ROOT)
    assert not loops, "modules that import each other:\n" + "\n".join(loops)


def test_the_loop_check_sees_planted_loops_and_no_false_ones(tmp_path):
    """A loop through a lazy import and a ``TYPE_CHECKING`` import is found, and so is a
    submodule using a name its package's ``__init__`` defines while that ``__init__`` imports
    it; a package handing on its submodules' names, imported by one of them, is no loop."""
    files = {
        "a.py": "def f():\n    from molprop.b import g\n",
        "b.py": (
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from molprop.a import f\n\ng = 1\n"
        ),
        "p/__init__.py": "from molprop.p.low import Low\nfrom .high import High\n",
        "p/low.py": "class Low: ...\n",
        "p/high.py": "from molprop.p import Low\nfrom . import low\nfrom .. import c\n\n"
        "class High(Low): ...\n",
        "c.py": "import molprop.p.low\n",
        "q/__init__.py": "VALUE = 1\nfrom molprop.q.sub import X\n",
        "q/sub.py": "from molprop.q import VALUE\n\nX = VALUE\n",
    }
    for name, text in {"__init__.py": "", **files}.items():
        (tmp_path / "molprop" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "molprop" / name).write_text(text)
    graph = import_graph(tmp_path, ("molprop",))
    assert graph["molprop.p.high"] == {"molprop.p.low": 1, "molprop.c": 3}
    assert graph["molprop.c"] == {"molprop.p.low": 1}
    loops = import_loops(tmp_path, ("molprop",))
    assert loops == [
        "2 modules (molprop.a, molprop.b): molprop/a.py:2 -> molprop/b.py:4 -> molprop/a.py",
        "2 modules (molprop.q, molprop.q.sub): "
        "molprop/q/__init__.py:2 -> molprop/q/sub.py:1 -> molprop/q/__init__.py",
    ], loops


@pytest.fixture(scope="module")
def augmented_artifact(tmp_path_factory) -> Path:
    """A label-augmented fine-tuned artifact (the shipped solubility model as its pretrained
    source, random head weights): enough to exercise the augmentation path at prediction."""
    import torch

    from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
    from molprop.artifact.store import load_config, save_artifact
    from molprop.models.model import MolPropModel

    out = tmp_path_factory.mktemp("augmented") / "model"
    source = ROOT / "pretrained" / "solubility"
    shutil.copytree(source, out / "pretrained", ignore=shutil.ignore_patterns("*.csv", "*.md"))
    pre = load_config(source)
    model_config = json.loads(json.dumps(pre.model.to_dict()))
    model_config["n_extra"] = 1
    from molprop.models.config import ModelConfig

    mc = ModelConfig.from_dict(model_config)
    torch.manual_seed(0)
    config = ArtifactConfig(
        model=mc,
        task=pre.task,
        featurizer=pre.featurizer,
        name="augmented",
        provenance=Provenance(strategy="label-augment", mode="inductive"),
        augment=Augmentation("label", "pretrained", (-3.0,), (2.0,)),
    )
    save_artifact(out, config, [MolPropModel.from_config(mc)])
    return out


def test_predicting_with_an_augmented_artifact_loads_no_training_code(augmented_artifact):
    code = (
        "import sys, molprop.inference as inf\n"
        f"p = inf.Predictor.from_pretrained({str(augmented_artifact)!r})\n"
        "out = p.predict(['CCO', 'c1ccccc1O'])\n"
        "assert (out['status'] == 'ok').all(), out\n"
        "assert p.augment_features([p.featurizer.from_smiles('CCO')]) is not None\n"
        "bad = sorted(m for m in sys.modules if m == 'lightning' or m.startswith(('lightning.',"
        " 'molprop.training', 'molprop.transfer', 'pytorch_lightning')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


#: a reference to the project's own past: the word issue, session or stop followed by a number
#: (a space, a hyphen or "#" between; also the plural, as in a range), or a session or stop named
#: relative to the work that wrote it (after this / last / previous / earlier). Plain words (early
#: stopping, stop the job, a pytest session, reissue) and names joined by an underscore, such as
#: ``results_session3.json`` (no word boundary before the word), do not match: file names are
#: checked by :data:`FILE_HISTORY`.
HISTORY = re.compile(
    r"\b(?:issue|session|stop)s?[ -]?#?\d"
    r"|\b(?:this|last|previous|earlier) (?:session|stop)s?\b",
    re.IGNORECASE,
)
#: what is read for history: the product, its tests, benchmarks, docs, notebooks and scripts
HISTORY_PLACES = ["molprop", "api", "tests", "benchmarks", "docs", "notebooks", "scripts"]
HISTORY_PLACES += ["README.md"]
#: text files among them (results such as ``*.json`` and ``*.csv`` are data, not prose)
HISTORY_SUFFIXES = {".py", ".js", ".html", ".css", ".md", ".ipynb", ".sh", ".txt", ".toml", ".yml"}


def _history_lines(place: Path, root: Path = ROOT) -> list[str]:
    """``path:line: text`` of every line under ``place`` (a file or a folder inside ``root``)
    that names the project's past; hidden folders and caches (``.ipynb_checkpoints``,
    ``__pycache__``) are skipped."""
    files = [place] if place.is_file() else sorted(place.rglob("*"))
    return [
        f"{path.relative_to(root)}:{n}: {line.strip()[:160]}"
        for path in files
        if path.is_file()
        and path.suffix in HISTORY_SUFFIXES
        and not any(part.startswith((".", "__pycache__")) for part in path.relative_to(root).parts)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]


@pytest.mark.parametrize("place", HISTORY_PLACES)
def test_no_project_history_in_the_code(place: str) -> None:
    """History lives in git: no numbered issue, session or stop, and none named relative to the
    work that wrote it, in the product's code, tests, benchmarks, docs, notebooks or scripts."""
    assert (ROOT / place).exists(), place
    assert _history_lines(ROOT / place) == []


#: (text, names history?): the pattern's own check; the number is joined on at run time, so
#: this file names no history itself
HISTORY_CASES = [
    ("fixed in issue ", True),
    ("(Issue #", True),
    ("session-", True),
    ("as measured in stop ", True),
    ("the default of sessions ", True),
    ("the pre-issue-", True),
    ("early stopping after ", False),
    ("stopping patience ", False),
    ("reissue ", False),
    ("results_session", False),
    ("a pytest session, scope ", False),
]


@pytest.mark.parametrize(("text", "history"), HISTORY_CASES)
def test_the_history_pattern_sees_numbered_history_not_plain_words(text, history) -> None:
    assert bool(HISTORY.search(text + "17")) is history
    assert not HISTORY.search(text)  # the word without its number is no history


@pytest.mark.parametrize(
    ("text", "history"),
    [
        ("what this " + "session changed", True),
        ("as the previous " + "stop found", True),
        ("earlier " + "sessions' changes", True),
        ("stop the job", False),
        ("in a new session", False),
        ("the session's server", False),
    ],
)
def test_the_history_pattern_sees_work_named_relative_to_itself(text, history) -> None:
    assert bool(HISTORY.search(text)) is history


def test_the_history_check_reads_docs_and_notebooks(tmp_path) -> None:
    """A planted history line is found in a markdown page and in a notebook's JSON source; a
    hidden checkpoint folder and a CSV are not read."""
    docs = tmp_path / "docs"
    (docs / ".ipynb_checkpoints").mkdir(parents=True)
    planted = "Measured in " + "session " + "25."
    (docs / "page.md").write_text(f"# Page\n\n{planted}\n", encoding="utf-8")
    (docs / "nb.ipynb").write_text(json.dumps({"cells": [{"source": [planted]}]}, indent=1))
    (docs / ".ipynb_checkpoints" / "old.md").write_text(planted, encoding="utf-8")
    (docs / "rows.csv").write_text(planted, encoding="utf-8")
    found = _history_lines(docs, root=tmp_path)
    assert [line.split(":")[0] for line in found] == ["docs/nb.ipynb", "docs/page.md"]
    assert _history_lines(docs / "page.md", root=tmp_path) == [f"docs/page.md:3: {planted}"]


#: a file or folder name that carries the project's past: the word issue, session or stop and a
#: number after a separator or at the start, or an ``_s`` suffix of two or more digits (a
#: session's short form); ``ESOL_seed0.json`` and ``qm8_seeds12`` are no history (cases in
#: :func:`test_the_file_name_check_sees_planted_history`)
FILE_HISTORY = re.compile(
    r"(?:^|[^a-z])(?:issue|session|stop)s?[_ -]?#?\d|(?:^|[_-])s\d{2,}(?=[_.-]|$)", re.IGNORECASE
)
#: where file names are read: the places above plus the shipped models and the data
FILE_NAME_PLACES = [*HISTORY_PLACES, "pretrained", "data"]


def _history_names(place: Path, root: Path = ROOT) -> list[str]:
    """Every file or folder under ``place`` (hidden ones and caches skipped) whose name names
    the project's past, relative to ``root``."""
    paths = [place] if place.is_file() else sorted(place.rglob("*"))
    out = []
    for path in paths:
        parts = path.relative_to(root).parts
        if any(part.startswith((".", "__pycache__")) for part in parts):
            continue
        if FILE_HISTORY.search(path.name):
            out.append(path.relative_to(root).as_posix())
    return out


@pytest.mark.parametrize("place", FILE_NAME_PLACES)
def test_no_project_history_in_file_names(place: str) -> None:
    """Results and folders are named for what they hold, not for the work that made them."""
    assert (ROOT / place).exists(), place
    assert _history_names(ROOT / place) == []


def test_the_file_name_check_sees_planted_history(tmp_path) -> None:
    docs = tmp_path / "docs"
    names = [
        "results/transfer_" + "issue" + "19_g4mp2.csv",
        "results/core_defaults_" + "session" + "3.json",
        "hpopt/lipophilicity_" + "s27/trials.md",
        "results/throughput_" + "s28.json",
        "results/ESOL_seed0.json",
        "results/transfer_crossfit_qm8_measured_seeds12.json",
        "results/mask_single_final.json",
        ".ipynb_checkpoints/old_" + "session" + "4.md",
    ]
    for name in names:
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text("")
    assert _history_names(docs, root=tmp_path) == [
        "docs/hpopt/lipophilicity_" + "s27",
        "docs/results/core_defaults_" + "session" + "3.json",
        "docs/results/throughput_" + "s28.json",
        "docs/results/transfer_" + "issue" + "19_g4mp2.csv",
    ]
