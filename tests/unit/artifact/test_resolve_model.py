"""Model names vs paths: a name is looked up only in the model directories, never the cwd."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from molprop.artifact.resolve import resolve_model, shipped_models_dir
from molprop.artifact.store import load_config
from molprop.errors import ArtifactError

REPO_PRETRAINED = shipped_models_dir()

SHIPPED = REPO_PRETRAINED / "solubility"


@pytest.fixture
def in_tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MOLPROP_MODEL_DIR", raising=False)
    return tmp_path


def _decoy(where: Path) -> Path:
    """A valid artifact (the shipped lipophilicity model) under the name ``solubility``."""
    shutil.copytree(REPO_PRETRAINED / "lipophilicity", where / "solubility")
    return where / "solubility"


def test_cwd_folder_named_like_a_shipped_model_does_not_shadow_it(in_tmp_cwd: Path) -> None:
    decoy = _decoy(in_tmp_cwd)
    assert resolve_model("solubility") == SHIPPED
    assert (
        load_config(resolve_model("solubility")).task.target_names
        != load_config(decoy).task.target_names
    )
    # the folder is still reachable, as a path
    assert resolve_model("./solubility") == Path("./solubility")
    assert resolve_model(Path("solubility")) == Path("solubility")
    assert resolve_model(str(decoy)) == decoy
    assert (
        load_config(resolve_model("./solubility")).task.target_names
        == load_config(resolve_model("lipophilicity")).task.target_names
    )


def test_bare_name_not_in_model_dirs_is_not_taken_from_cwd(in_tmp_cwd: Path) -> None:
    shutil.copytree(REPO_PRETRAINED / "lipophilicity", in_tmp_cwd / "my_model")
    with pytest.raises(
        ArtifactError,
        match=r"no model named 'my_model'.*pass it as a path: "
        r"\./my_model",
    ):
        resolve_model("my_model")
    assert resolve_model("./my_model") == Path("./my_model")


def test_model_dir_env_comes_first(in_tmp_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = in_tmp_cwd / "models"
    models.mkdir()
    own = _decoy(models)
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(models))
    assert resolve_model("solubility") == own
    assert resolve_model("bbb_penetration") == REPO_PRETRAINED / "bbb_penetration"


@pytest.mark.parametrize(
    "name",
    [
        "..",
        "../pretrained/solubility",
        "solubility/..",
        "models/../solubility",
        ".hidden",
        "sol ubility",
    ],
)
def test_names_cannot_escape_the_model_dirs(
    in_tmp_cwd: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Strings that are not plain names are paths (relative to the cwd), never joined onto a
    model directory: ``MOLPROP_MODEL_DIR/../x`` cannot be reached through a name."""
    models = in_tmp_cwd / "models"
    models.mkdir()
    outside = in_tmp_cwd / "secret"
    shutil.copytree(SHIPPED, outside / "solubility")  # MOLPROP_MODEL_DIR/../secret/solubility
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(models))
    with pytest.raises(ArtifactError):
        resolve_model(name)
    with pytest.raises(ArtifactError):
        resolve_model("../secret/solubility")  # from cwd: no such path
    monkeypatch.chdir(models)
    assert resolve_model("../secret/solubility") == Path("../secret/solubility")  # a path: ok


def test_absolute_path_and_name_errors(in_tmp_cwd: Path) -> None:
    assert resolve_model(str(SHIPPED)) == SHIPPED
    with pytest.raises(ArtifactError, match="no model named 'nope'.*solubility"):
        resolve_model("nope")
    with pytest.raises(ArtifactError, match="no model artifact at"):
        resolve_model(str(in_tmp_cwd / "nope"))


def test_a_panel_name_where_one_model_is_needed_says_so_and_names_its_models() -> None:
    """``molprop finetune --from admet`` (and every other one-model use): the shipped panel is
    not a model; the error says it is a panel and which models it is made of."""
    with pytest.raises(ArtifactError) as caught:
        resolve_model("admet")
    message = str(caught.value)
    assert "'admet' is a panel" in message
    assert "admet_regression, admet_classification, admet_tox21" in message
    with pytest.raises(ArtifactError) as other:
        resolve_model("no_such_model_here")
    assert "panel" not in str(other.value)
