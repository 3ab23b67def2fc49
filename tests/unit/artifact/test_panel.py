"""Panel files: read and checked in molprop.artifact.panel, found by name through the one model
resolver (a model of the same name comes first), shipped beside the models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from molprop.artifact.panel import (
    PanelDefinition,
    endpoint_owners,
    load_panel,
    read_panel,
    read_panels,
)
from molprop.artifact.resolve import (
    available_models,
    available_panels,
    is_panel,
    resolve_model,
    resolve_panel,
)
from molprop.errors import ArtifactError

REPO_PRETRAINED = Path(__file__).resolve().parents[3] / "pretrained"
ADMET = REPO_PRETRAINED / "panels" / "admet.json"


def _write(where: Path, name: str, content: object) -> Path:
    path = where / "panels" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture
def model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An extra model directory (``$MOLPROP_MODEL_DIR``), empty; the cwd elsewhere."""
    root = tmp_path / "models"
    root.mkdir()
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(root))
    monkeypatch.chdir(tmp_path)
    return root


def test_the_shipped_admet_panel_names_shipped_2d_models_in_display_order() -> None:
    panel = read_panel(ADMET)
    assert panel.name == "admet" and panel.description
    assert panel.models == (
        "admet_regression",
        "admet_classification",
        "admet_tox21",
        "hydration_free_energy",
    )
    # admet_regression's hydration head has no interval: the FreeSolv model answers it
    assert panel.served_by == {"hydration_free_energy": "hydration_free_energy"}
    shipped = {p.parent.name for p in REPO_PRETRAINED.glob("*/config.json")}
    assert set(panel.models) <= shipped
    assert not {p.stem for p in (REPO_PRETRAINED / "panels").glob("*.json")} & shipped


def test_a_panel_is_found_by_name_in_the_model_directories(model_dir: Path) -> None:
    path = _write(model_dir, "mine", {"name": "mine", "models": ["solubility"]})
    assert resolve_panel("mine") == path and is_panel("mine")
    assert load_panel("mine") == PanelDefinition("mine", ("solubility",), "")
    assert "mine" in available_panels()
    assert "panels" not in available_models()  # the panels folder is no model
    # a path to the file works too; a folder named like it in the cwd is never looked at
    assert load_panel(str(path)).models == ("solubility",) and is_panel(str(path))
    _write(Path.cwd(), "other", {"name": "other", "models": ["solubility"]})
    with pytest.raises(ArtifactError, match=r"no panel named 'other'.*panels: \[.*'mine'"):
        resolve_panel("other")
    assert not is_panel("other") and not is_panel("no_such_thing")


def test_a_model_of_the_same_name_comes_first(model_dir: Path) -> None:
    _write(model_dir, "solubility", {"name": "solubility", "models": ["lipophilicity"]})
    assert not is_panel("solubility")
    assert resolve_model("solubility").name == "solubility"


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "cannot read the panel"),
        ([1, 2], "a panel is a JSON object"),
        (
            {"name": "p", "models": ["solubility"], "colour": "red"},
            r"unknown key\(s\) \['colour'\]",
        ),
        ({"name": "p", "models": []}, "non-empty list"),
        ({"name": "p", "models": "solubility"}, "non-empty list"),
        ({"name": "p", "models": ["../solubility"]}, r"models\[0\] = '../solubility' is not"),
        ({"name": "p", "models": ["solubility", "solubility"]}, "listed more than once"),
        ({"name": "p", "models": ["solubility"], "description": 3}, "'description' must be"),
        ({"name": "q", "models": ["solubility"]}, "named 'q' but its file 'p.json'"),
        ({"name": "p", "models": ["solubility"], "served_by": ["logS"]}, "'served_by' must map"),
        (
            {"name": "p", "models": ["solubility"], "served_by": {"logS": "lipophilicity"}},
            r"served_by\['logS'\] = 'lipophilicity' is not one of the panel's models",
        ),
    ],
)
def test_a_bad_panel_file_is_refused_naming_it(
    model_dir: Path, content: object, message: str
) -> None:
    path = _write(model_dir, "p", content)
    with pytest.raises(ArtifactError, match=message) as caught:
        read_panel(path)
    assert str(path) in str(caught.value)


def test_read_panels_skips_a_broken_file_and_keeps_the_others(model_dir: Path) -> None:
    _write(model_dir, "broken", {"name": "broken"})
    shutil.copy(ADMET, model_dir / "panels" / "admet.json")
    panels = read_panels(model_dir)
    assert list(panels) == ["admet"] and panels["admet"] == read_panel(ADMET)


def test_a_panel_link_out_of_the_model_directory_is_refused(
    model_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"name": "leak", "models": ["solubility"]}))
    (model_dir / "panels").mkdir()
    (model_dir / "panels" / "leak.json").symlink_to(outside)
    with pytest.raises(ArtifactError, match="leads outside the model directory"):
        resolve_panel("leak")


def test_endpoint_owners_keep_the_first_place_of_a_served_target() -> None:
    targets = [("a", ["x", "y"]), ("b", ["z"]), ("c", ["y"])]
    assert endpoint_owners(targets) == [("x", "a"), ("y", "a"), ("z", "b"), ("y", "c")]
    assert endpoint_owners(targets, {"y": "c"}) == [("x", "a"), ("y", "c"), ("z", "b")]
    assert endpoint_owners(targets, {"y": "a"}) == [("x", "a"), ("y", "a"), ("z", "b")]
    definition = PanelDefinition.from_dict(
        {"name": "p", "models": ["a", "c"], "served_by": {"y": "c"}}
    )
    assert definition.to_dict()["served_by"] == {"y": "c"}
    assert "served_by" not in PanelDefinition("p", ("a",)).to_dict()
