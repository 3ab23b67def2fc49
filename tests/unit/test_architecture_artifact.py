"""Only ``molprop/artifact/`` touches the files of a model directory (docs/ARCHITECTURE.md).

Everything else opens a model through :class:`molprop.artifact.Artifact` and reads or writes its
config, metrics, split, calibration, domain, reference, card, weights and pretrained copy
through it. The check reads the source of ``molprop/`` (outside ``molprop/artifact/``) and
``api/`` with ``ast`` and reports, per module and line:

* a string that names a model file as a path: a file name of the layout
  (:data:`molprop.artifact.paths.MODEL_FILES`) on its own or at the end of a path or glob
  (``"config.json"``, ``"*/config.json"``, the ``"/split.csv"`` of ``f"{out}/split.csv"``), a
  path into the members' folder (``"members/0/..."``), or such a name joined onto a path
  (``out / "members"``); prose that mentions a file (an error message, a docstring) is no path
  and is not reported;
* an import of the layout's names or path helpers from ``molprop.artifact``
  (``CONFIG_NAME``, ``artifact_file``, ``member_path``, the module ``molprop.artifact.paths``),
  or one of them read as an attribute (``store.METRICS_NAME``).

Without the names no module can open, read, write, copy or glob a model's files itself.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from molprop.artifact.paths import MEMBERS_DIR, MODEL_FILES

ROOT = Path(__file__).resolve().parents[2]
#: the one package allowed to name model files
ARTIFACT = ("molprop", "artifact")
#: what is checked
PLACES = ("molprop", "api")
#: names ``molprop.artifact`` keeps for itself: the layout's file names and the functions that
#: name paths inside a model directory
LAYOUT_NAMES = {
    "CALIBRATION_NAME",
    "CARD_NAME",
    "CONFIG_NAME",
    "DOMAIN_NAME",
    "INVALID_ROWS_NAME",
    "LOGS_DIR",
    "MEMBERS_DIR",
    "METRICS_NAME",
    "MODEL_FILES",
    "REFERENCE_NAME",
    "SPLIT_NAME",
    "WEIGHTS_NAME",
    "artifact_file",
    "member_name",
    "member_path",
}
LAYOUT_MODULE = "molprop.artifact.paths"
#: a path (no whitespace): folders, then a last part
_PATH = re.compile(r"^(?:[^\s/]*/)*(?P<last>[^\s/]+)$")
#: a glob of file names with an extension (``*.safetensors``, ``model.*``)
_GLOB = re.compile(r"[\w*?.-]*[*?][\w*?.-]*\.[\w*?.-]+|[\w.-]+\.[*?][\w*?.-]*")


def names_model_file(text: str) -> str | None:
    """The model file ``text`` names as a path or glob (None if none): its last part is, or as
    a glob matches, a file of the layout, or it is a path into the members' folder."""
    found = _PATH.fullmatch(text)
    if found is None:
        return None
    last = found["last"]
    for name in MODEL_FILES:
        if last == name or (_GLOB.fullmatch(last) and fnmatch.fnmatch(name, last)):
            return name
    if text.startswith(f"{MEMBERS_DIR}/"):
        return MEMBERS_DIR
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    """``id`` of every docstring node (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _module_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def file_violations(path: Path, module: str) -> Iterator[str]:
    """``line: what`` for each place ``path`` (the module ``module``) names a model file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            name = names_model_file(node.value)
            if name is not None:
                yield f"{node.lineno}: names the model file {name} ({node.value!r})"
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in (*MODEL_FILES, MEMBERS_DIR)
        ):
            yield f"{node.lineno}: joins the model file {node.right.value} onto a path"
        elif isinstance(node, ast.ImportFrom):
            source = _module_of(node, module, path.name == "__init__.py")
            if not (source == "molprop.artifact" or source.startswith("molprop.artifact.")):
                continue
            for alias in node.names:
                if source == "molprop.artifact" and alias.name == "paths":
                    yield f"{node.lineno}: imports {LAYOUT_MODULE}"
                elif source == LAYOUT_MODULE or alias.name in LAYOUT_NAMES:
                    yield f"{node.lineno}: imports {alias.name} from {source}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == LAYOUT_MODULE:
                    yield f"{node.lineno}: imports {LAYOUT_MODULE}"
        elif isinstance(node, ast.Attribute) and node.attr in LAYOUT_NAMES - {"member_path"}:
            # ``member_path`` is also Artifact's method (it names the file through the handle)
            yield f"{node.lineno}: reads {node.attr} of the artifact's layout"


def model_file_violations(root: Path = ROOT) -> list[str]:
    """``file:line: what`` for every module of :data:`PLACES` outside ``molprop/artifact/``
    that names a model file (see the module docstring)."""
    out = []
    for top in PLACES:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[: len(ARTIFACT)] == ARTIFACT:
                continue
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            rel = path.relative_to(root)
            found = sorted(file_violations(path, module), key=lambda v: int(v.split(":")[0]))
            out += [f"{rel}:{v}" for v in found]
    return out


def test_only_the_artifact_package_names_model_files() -> None:
    found = model_file_violations()
    assert not found, "model files named outside molprop/artifact/ (use Artifact):\n" + "\n".join(
        found
    )


PLANTED = '''\
"""Reads config.json and metrics.json of the model (a docstring: prose, not reported)."""
import json
import molprop.artifact.paths
from pathlib import Path

import pandas as pd

from molprop.artifact import paths
from molprop.artifact.store import CONFIG_NAME, load_config
from molprop.artifact.paths import artifact_file
from ..artifact.calibration import CALIBRATION_NAME
from molprop.artifact import store


def f(out: Path, name: str):
    metrics = json.loads((out / "metrics.json").read_text())
    split = pd.read_csv(f"{out}/split.csv")
    weights = out / "members" / "0"
    configs = sorted(out.glob("*/config.json"))
    card = Path(out, "card.md").read_text()
    stored = store.METRICS_NAME
    member = "members/1/model.safetensors"
    sizes = sum(p.stat().st_size for p in out.rglob("*.safetensors"))
    raise RuntimeError(f"{out}/split.csv does not match {name}: retrain it")
'''
#: the lines the check must report in PLANTED (line number: what it names)
PLANTED_FOUND = {
    3: "imports molprop.artifact.paths",
    8: "imports molprop.artifact.paths",
    9: "imports CONFIG_NAME from molprop.artifact.store",
    10: "imports artifact_file from molprop.artifact.paths",
    11: "imports CALIBRATION_NAME from molprop.artifact.calibration",
    16: "names the model file metrics.json",
    17: "names the model file split.csv",
    18: "joins the model file members onto a path",
    19: "names the model file config.json",
    20: "names the model file card.md",
    21: "reads METRICS_NAME",
    22: "names the model file model.safetensors",
    23: "names the model file model.safetensors",
}


def test_the_check_sees_planted_model_file_access(tmp_path: Path, monkeypatch) -> None:
    """A module of training that opens model files itself is reported on every line that
    names one (imports of the layout included), prose is not; the same module inside
    ``molprop/artifact/`` is fine."""
    for where in ("training", "artifact"):
        (tmp_path / "molprop" / where).mkdir(parents=True)
        (tmp_path / "molprop" / where / "bad.py").write_text(PLANTED)
    (tmp_path / "api").mkdir()
    found = model_file_violations(tmp_path)
    assert all(f.startswith("molprop/training/bad.py:") for f in found), found
    lines: dict[int, list[str]] = {}
    for f in found:
        _, line, what = f.split(":", 2)
        lines.setdefault(int(line), []).append(what.strip())
    assert set(lines) == set(PLANTED_FOUND), sorted(lines.items())
    for line, what in PLANTED_FOUND.items():
        assert any(w.startswith(what) for w in lines[line]), (line, lines[line])
    assert 1 not in lines and 24 not in lines  # the docstring and the error message


def test_names_model_file_tells_paths_from_prose() -> None:
    assert names_model_file("config.json") == "config.json"
    assert names_model_file("runs/esol/metrics.json") == "metrics.json"
    assert names_model_file("/calibration.json") == "calibration.json"
    assert names_model_file("*/config.json") == "config.json"
    assert names_model_file("members/0/model.safetensors") == "model.safetensors"
    assert names_model_file("members/0") == "members"
    assert names_model_file("*.safetensors") == "model.safetensors"
    assert names_model_file("/split.csv does not match ") is None  # an error message
    assert names_model_file(".metrics.json") is None  # <data>.metrics.json of evaluate
    assert names_model_file("members") is None  # a key of metrics.json
    assert names_model_file("train.csv") is None


if __name__ == "__main__":  # list the offending lines
    print("\n".join(model_file_violations()) or "none")
    sys.exit(0)
