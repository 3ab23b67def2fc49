"""Save -> load gives identical predictions; the artifact holds JSON + safetensors only."""

from __future__ import annotations

import json

import pytest
import torch

from molprop.artifact.config import ArtifactConfig
from molprop.artifact.store import load_config, load_members, save_artifact
from molprop.data import collate_graphs
from molprop.errors import ArtifactError, ConfigError
from molprop.featurize import FeaturizerConfig, Graph2DFeaturizer
from molprop.models.config import ModelConfig, TaskConfig
from molprop.models.model import MolPropModel

F = Graph2DFeaturizer()


def _artifact(tmp_path, n_members=2, **model):
    """A saved artifact of ``n_members`` seeded random members (``model``: ModelConfig fields
    replacing the small defaults) -> the members."""
    sizes = {"hidden_dim": 16, "heads": 2, "num_seeds": 2, "layers": "MSP S", **model}
    cfg = ModelConfig(node_dim=F.node_dim, edge_dim=F.edge_dim, n_tasks=1, **sizes)
    members = []
    for s in range(n_members):
        torch.manual_seed(s)
        members.append(MolPropModel.from_config(cfg).eval())
    art = ArtifactConfig(
        model=cfg,
        task=TaskConfig(("y",), "regression", ("u",), (1.0,), (2.0,)),
        featurizer=FeaturizerConfig(),
        n_members=n_members,
    )
    save_artifact(tmp_path, art, members)
    return members


def test_roundtrip_identical_predictions(tmp_path):
    members = _artifact(tmp_path)
    loaded = load_members(tmp_path)
    batch = collate_graphs([F.from_smiles(s) for s in ["CCO", "c1ccccc1N", "C"]])
    with torch.no_grad():
        for a, b in zip(members, loaded):
            assert torch.equal(a(batch), b(batch))
    assert load_config(tmp_path).task.scaler_std == (2.0,)


def test_artifact_contains_no_pickle(tmp_path):
    _artifact(tmp_path)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == {".json", ".safetensors"}
    for p in files:
        head = p.read_bytes()[:2]
        assert head != b"\x80\x04" and head != b"\x80\x02"  # pickle protocol headers
        if p.suffix == ".safetensors":
            n = int.from_bytes(p.read_bytes()[:8], "little")
            json.loads(p.read_bytes()[8 : 8 + n])  # safetensors header is JSON


def test_strict_load_names_mismatched_keys(tmp_path):
    _artifact(tmp_path, n_members=1)
    data = json.loads((tmp_path / "config.json").read_text())
    data["model"]["layers"] = "MSMP S"  # one more encoder block than the weights have
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="missing keys"):
        load_members(tmp_path)


def test_bad_schema_and_unknown_keys_rejected(tmp_path):
    _artifact(tmp_path, n_members=1)
    data = json.loads((tmp_path / "config.json").read_text())
    data["model"]["bogus"] = 1
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="bogus"):
        load_config(tmp_path)
    data["schema_version"] = 99
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="schema"):
        load_config(tmp_path)


def test_provenance_update_rewrites_config_only_on_change_and_atomically(tmp_path, monkeypatch):
    """Two processes setting the same provenance at once (two ``--folds`` runs of one model)
    once left a half-written config.json that the other could not read: setting a value the
    file already has leaves the file untouched; a change is written through a temporary file
    renamed over it (a reader never sees a part) and leaves no temporary behind."""
    import os

    import molprop.artifact.store as store

    _artifact(tmp_path, n_members=1)
    store.update_provenance(tmp_path, data="data/x.csv")
    path = tmp_path / "config.json"
    before = (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes())
    written: list = []
    monkeypatch.setattr(store, "write_json", lambda p, d: written.append(p))
    store.update_provenance(tmp_path, data="data/x.csv")
    assert written == []
    assert (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes()) == before
    monkeypatch.undo()
    replaced: list = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((a, b)), real_replace(a, b)))
    store.update_provenance(tmp_path, data="data/y.csv")
    assert [b for _, b in replaced] == [path]
    assert json.loads(path.read_text())["extra"]["data"] == "data/y.csv"
    assert load_config(tmp_path).provenance.data == "data/y.csv"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
