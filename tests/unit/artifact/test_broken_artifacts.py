"""Broken or hostile model directories (copies of a shipped model, damaged): loading refuses
each with an error naming the file and the reason, before reading or allocating anything it
should not: sizes that disagree with the weights, zero or huge sizes, NaN / infinity or
malformed calibration, files and links that lead outside the directory."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from molprop.artifact import Artifact
from molprop.artifact.calibration import Calibration
from molprop.artifact.domain import ApplicabilityDomain, add_domain_to_artifact
from molprop.artifact.paths import artifact_file
from molprop.artifact.store import load_config, load_members, read_metrics
from molprop.errors import ArtifactError, ConfigError, MolpropError
from molprop.inference import Predictor
from molprop.models.model import MolPropModel

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "pretrained" / "solubility"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A copy of the shipped solubility model (ensemble, calibrated, with a domain)."""
    return Path(shutil.copytree(SHIPPED, tmp_path / "solubility"))


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _set_model(model: Path, **values) -> None:
    _edit_json(model / "config.json", lambda d: d["model"].update(values))


def test_copy_loads(model: Path) -> None:
    predictor = Predictor.from_pretrained(model)
    assert predictor.predict(["CCO"])["status"].tolist() == ["ok"]


def test_sizes_disagreeing_with_weights_refused_before_building(model: Path, monkeypatch) -> None:
    """The header check refuses sizes the weights do not have before any model is allocated:
    every model built on the way is built on the meta device. (A hidden_dim of 8192 would be
    gigabytes; 1024 keeps this test cheap on code that builds first.)"""
    _set_model(model, hidden_dim=1024, heads=4)
    devices = []
    build = MolPropModel.from_config.__func__

    def spy(cls, config):
        devices.append(torch.get_default_device().type)
        return build(cls, config)

    monkeypatch.setattr(MolPropModel, "from_config", classmethod(spy))
    with pytest.raises(ArtifactError) as err:
        load_members(model)
    message = str(err.value)
    assert str(model / "members" / "0" / "model.safetensors") in message
    assert "shape mismatch" in message and "config [1024" in message
    assert devices == ["meta"]


def test_renamed_tensor_refused(model: Path) -> None:
    from safetensors.torch import load_file, save_file

    path = model / "members" / "1" / "model.safetensors"
    state = load_file(str(path))
    key = sorted(state)[0]
    state["bogus." + key] = state.pop(key)
    save_file(state, str(path))
    with pytest.raises(ArtifactError, match=r"members/1/model.safetensors.*missing keys"):
        load_members(model)


def test_weights_not_safetensors_refused(model: Path) -> None:
    (model / "members" / "0" / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(ArtifactError, match="corrupt weights .*members/0/model.safetensors"):
        Predictor.from_pretrained(model)


@pytest.mark.parametrize(
    "values, match",
    [
        ({"hidden_dim": 0}, "hidden_dim must be between 1 and"),
        ({"heads": 0}, "heads must be between 1 and"),
        ({"num_seeds": 0}, "num_seeds"),
        ({"node_dim": -3}, "node_dim"),
        ({"head_hidden": 0}, "head_hidden"),
        ({"hidden_dim": 20000}, "hidden_dim must be between 1 and 8192, got 20000"),
        ({"hidden_dim": 64.5}, "hidden_dim must be an integer"),
        ({"mlp_mult": 10**9}, "mlp_mult"),
        ({"rbf_cutoff": float("nan")}, "rbf_cutoff"),
        ({"layers": "M" * 500 + "P"}, "layer"),
    ],
)
def test_bad_sizes_in_config_refused_naming_file(model: Path, values: dict, match: str) -> None:
    _set_model(model, **values)
    with pytest.raises(ConfigError, match=match) as err:
        Predictor.from_pretrained(model)
    assert str(model / "config.json") in str(err.value)


def test_zero_members_and_nan_scaler_refused(model: Path) -> None:
    _edit_json(model / "config.json", lambda d: d.update(n_members=0))
    with pytest.raises(ConfigError, match="n_members"):
        load_config(model)
    _edit_json(model / "config.json", lambda d: d.update(n_members=2))
    _edit_json(model / "config.json", lambda d: d["task"].update(scaler_std=[float("nan")]))
    with pytest.raises(ConfigError, match="scaler_std must hold finite numbers"):
        load_config(model)


@pytest.mark.parametrize("text", ["[1, 2]", '{"schema_version": 1, "model": 5}', "{not json"])
def test_config_not_a_config_refused(model: Path, text: str) -> None:
    (model / "config.json").write_text(text)
    with pytest.raises(MolpropError, match="config.json"):
        load_config(model)


def _target(data: dict) -> dict:
    return next(iter(data["targets"].values()))


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: _target(d)["residuals"].__setitem__(2, math.nan), r"residuals\[2\] is nan"),
        (lambda d: _target(d)["residuals"].__setitem__(0, math.inf), r"residuals\[0\] is inf"),
        (lambda d: _target(d)["stds"].__setitem__(5, -math.inf), r"stds\[5\] is -inf"),
        (lambda d: _target(d).update(offset=math.nan), "offset"),
        (lambda d: _target(d).update(offset=-1.0), "offset must be > 0"),
        (lambda d: _target(d).update(beta=math.inf), "beta"),
        (lambda d: _target(d)["residuals"].__setitem__(1, "x"), r"residuals\[1\] is 'x'"),
        (lambda d: _target(d)["in_domain"].__setitem__(0, 7), "in_domain"),
        (lambda d: _target(d).update(residuals=[]), "non-empty"),
        (lambda d: d.update(targets=[1, 2]), "calibration"),
        (
            lambda d: _target(d)["multipliers"]["bins"]["all"].__setitem__(3, math.nan),
            r"multipliers.bins.all\[3\] is nan",
        ),
    ],
)
def test_malformed_calibration_refused_with_reason(model: Path, edit, match: str) -> None:
    _edit_json(model / "calibration.json", edit)
    with pytest.raises(ArtifactError, match=match) as err:
        Predictor.from_pretrained(model)
    assert "calibration.json" in str(err.value)


def test_calibration_as_written_by_python_json_with_nan_refused(model: Path) -> None:
    """``json.dumps`` writes NaN and Infinity as bare words that ``json.loads`` reads back."""
    text = (model / "calibration.json").read_text()
    data = json.loads(text)
    _target(data)["residuals"][0] = float("nan")
    raw = json.dumps(data)
    assert "NaN" in raw
    (model / "calibration.json").write_text(raw)
    with pytest.raises(ArtifactError, match="NaN and infinity are not allowed"):
        Calibration.load(model)


def test_card_linked_outside_is_not_read(model: Path, tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (model / "card.md").unlink()
    (model / "card.md").symlink_to(secret)
    with pytest.raises(ArtifactError, match="leads outside the model directory") as err:
        Artifact(model).read_card()
    assert "root:x" not in str(err.value)


def test_link_to_etc_passwd_refused(model: Path) -> None:
    (model / "card.md").unlink()
    (model / "card.md").symlink_to("/etc/passwd")
    with pytest.raises(ArtifactError, match="outside"):
        Artifact(model).read_card()


READERS = {
    "config.json": load_config,
    "calibration.json": Calibration.load,
    "domain.safetensors": ApplicabilityDomain.load,
    "metrics.json": read_metrics,
    "split.csv": add_domain_to_artifact,
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_model_file_linked_outside_refused(model: Path, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    shutil.move(str(model / name), outside)
    (model / name).symlink_to(outside)
    with pytest.raises(ArtifactError, match="outside the model directory"):
        READERS[name](model)
    if name != "split.csv" and name != "metrics.json":  # the predictor reads the others
        with pytest.raises(ArtifactError, match="outside the model directory"):
            Predictor.from_pretrained(model)


def test_members_directory_linked_outside_refused(model: Path, tmp_path: Path) -> None:
    shutil.move(str(model / "members"), tmp_path / "members")
    (model / "members").symlink_to(tmp_path / "members")
    with pytest.raises(ArtifactError, match=r"members/0/model.safetensors leads outside"):
        load_members(model)


def test_links_inside_the_directory_and_a_linked_directory_are_fine(
    model: Path, tmp_path: Path
) -> None:
    (model / "docs").mkdir()
    shutil.move(str(model / "card.md"), model / "docs" / "card.md")
    (model / "card.md").symlink_to(Path("docs") / "card.md")
    link = tmp_path / "linked-model"
    link.symlink_to(model)
    assert Artifact(link).read_card() == (model / "docs" / "card.md").read_text()
    assert Predictor.from_pretrained(link).predict(["CCO"])["status"].tolist() == ["ok"]


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x"])
def test_artifact_file_refuses_names_leaving(tmp_path: Path, name: str) -> None:
    (tmp_path / "m").mkdir()
    with pytest.raises(ArtifactError, match="outside"):
        artifact_file(tmp_path / "m", name)
    assert artifact_file(tmp_path / "m", "sub/ok.json") == tmp_path / "m" / "sub" / "ok.json"


def test_augment_source_outside_refused(model: Path, tmp_path: Path) -> None:
    """An augmented model's pretrained copy is a sub-directory: a source naming a model outside
    (here a loadable one) is refused, not loaded."""
    from molprop.artifact.config import Augmentation
    from molprop.inference.augment import Augmenter

    shutil.copytree(SHIPPED, tmp_path / "elsewhere")
    config = load_config(model)
    augment = Augmentation("label", "../elsewhere", (0.0,), (1.0,))
    augmenter = Augmenter(Artifact(model), type(config)(**{**config.__dict__, "augment": augment}))
    with pytest.raises(ArtifactError, match="elsewhere leads outside the model directory"):
        augmenter.features([])
