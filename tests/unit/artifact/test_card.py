"""Model cards (rendered from the Jinja2 templates of molprop/artifact/templates/): the metrics
table comes from metrics.json, the text says what the model is (ESA/NSA, 2D/3D, periodic,
per-atom, fine-tuned, augmented)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from molprop.artifact import Artifact
from molprop.artifact.card import CardTexts, model_card, per_target_metrics
from molprop.artifact.config import ArtifactConfig, Augmentation, Provenance
from molprop.artifact.store import read_metrics, save_artifact, write_metrics
from molprop.errors import ArtifactError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.models.config import ModelConfig, TaskConfig, TrainConfig
from molprop.models.model import MolPropModel


def _config(targets: tuple[str, ...], task_type: str = "regression") -> ArtifactConfig:
    """A small 2D config (no weights: a card reads only the config)."""
    n = len(targets)
    return ArtifactConfig(
        model=ModelConfig(node_dim=8, edge_dim=4, n_tasks=n, hidden_dim=16, heads=2),
        task=TaskConfig(
            targets,
            task_type=task_type,
            units=("probability",) * n,
            scaler_mean=(0.0,) * n,
            scaler_std=(1.0,) * n,
        ),
        featurizer=FeaturizerConfig("2d"),
        name="m",
    )


#: what a test card's caller says
TEXTS = CardTexts(title="t", data_source="d", licence="MIT", intended_use="tests")


def _section(card: str, heading: str) -> list[str]:
    """The lines of ``card``'s section ``heading`` (without the heading and blank ends)."""
    lines = card.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


def _rendered(config: ArtifactConfig, test: dict) -> str:
    return model_card(config, {"test": test}, None, None, None, None, TEXTS)


def test_metrics_table_has_members_and_ensemble() -> None:
    test = {
        "ensemble": {"rmse": 0.8123, "mae": 0.6, "r2": 0.81, "n": 113},
        "members": [
            {"rmse": 0.9, "mae": 0.7, "r2": 0.7, "n": 113},
            {"rmse": 0.95, "mae": 0.71, "r2": 0.69, "n": 113},
        ],
    }
    lines = _section(_rendered(_config(("y",)), test), "## Test metrics")
    assert lines[0] == "| model | rmse | mae | r2 | n |" and lines[1] == "|---|---|---|---|---|"
    assert lines[2].startswith("| member 0 | 0.900 |") and lines[3].startswith("| member 1 | 0.950")
    assert lines[-1] == "| **ensemble (mean)** | 0.812 | 0.600 | 0.810 | 113 |"
    cls = _section(
        _rendered(
            _config(("p",), "classification"),
            {"ensemble": {"roc_auc": 0.9, "mcc": 0.5, "accuracy": 0.8, "n": 5}},
        ),
        "## Test metrics",
    )
    assert "roc_auc" in cls[0] and "0.900" in cls[-1] and len(cls) == 3


# ----------------------------------------------------------------- cards say what the model is


def _artifact(
    directory: Path,
    *,
    token_kind: str = "esa",
    featurizer: FeaturizerConfig | None = None,
    provenance: Provenance | None = None,
    augment: Augmentation | None = None,
    per_atom: bool = False,
    sizes_key: str = "split_sizes",
) -> Path:
    """A tiny real artifact (2 members, random weights, no training) with a metrics.json."""
    featurizer = featurizer or FeaturizerConfig("2d")
    feat = build_featurizer(featurizer)
    model = ModelConfig(
        node_dim=feat.node_dim,
        edge_dim=feat.edge_dim,
        n_tasks=1,
        token_kind=token_kind,
        hidden_dim=16,
        heads=2,
        layers="MSP",
        num_seeds=2,
        head_hidden=16,
        n_extra=len(augment.mean) if augment else 0,
        size_path=not per_atom,
    )
    task = TaskConfig(
        ("y",), units=("eV",), scaler_mean=(0.0,), scaler_std=(1.0,), per_atom=per_atom
    )
    config = ArtifactConfig(
        model=model,
        task=task,
        featurizer=featurizer,
        train=TrainConfig(epochs=3, ensemble_size=2),
        n_members=2,
        name=directory.name,
        provenance=provenance or Provenance(data="x.csv", split_type="scaffold"),
        augment=augment,
    )
    torch.manual_seed(0)
    save_artifact(directory, config, [MolPropModel.from_config(model) for _ in range(2)])
    row = {"rmse": 0.5, "mae": 0.4, "r2": 0.9, "n": 10}
    write_metrics(
        directory,
        {
            "test": {"ensemble": row, "members": [row, row]},
            "training": {sizes_key: {"train": 80, "val": 10, "test": 10}},
        },
    )
    return directory


def _card(directory: Path, **kwargs: object) -> str:
    artifact = Artifact(directory)
    artifact.write_card(replace(TEXTS, **kwargs))
    return artifact.read_card()


def test_card_of_an_nsa_2d_model(tmp_path: Path) -> None:
    card = _card(_artifact(tmp_path / "nsa", token_kind="nsa"))
    assert "2 NSA members (node set attention: the tokens are the atoms)" in card
    assert "edge set attention" not in card and "ESA" not in card
    assert "2D molecular graph parsed by RDKit" in card and "featuriser `2d` version 2" in card
    # featuriser version 2 encodes CIP stereo: the card must not say stereo is invisible
    assert "CIP labels" in card and "stereoisomers are told apart" in card
    assert "stereoisomers and conformers are not distinguished" not in card
    assert "Trained on 80 molecules" in card and "3D" not in card


def test_card_of_a_periodic_3d_per_atom_model(tmp_path: Path) -> None:
    card = _card(
        _artifact(
            tmp_path / "p3d",
            featurizer=FeaturizerConfig("3d", {"tags": True}, version=2),  # radius mode
            provenance=Provenance(data="oxides.extxyz", split_type="random", periodic=True),
            per_atom=True,
        )
    )
    assert "ESA members (edge set attention: the tokens are the radius graph's" in card
    assert "3D radius graph (featuriser `3d` version 2)" in card
    assert "cutoff of 6 Å" in card and "Trained on periodic structures" in card
    assert "atom features: element, OC20 tag." in card and "test 10 structures" in card
    assert "per-atom target" in card and "size path off" in card
    assert "enantiomers get the same prediction" in card
    assert "2D" not in card and "CIP" not in card and "random-split test set" in card


def test_card_of_a_molecular_3d_nsa_model_with_its_cutoff(tmp_path: Path) -> None:
    card = _card(
        _artifact(
            tmp_path / "m3d",
            token_kind="nsa",
            featurizer=FeaturizerConfig(
                "3d",
                {"mode": "radius", "cutoff": 4.5, "max_neighbors": None, "atom_gaussians": False},
            ),
            provenance=Provenance(data="qm9.sdf", split_type="scaffold", periodic=False),
        )
    )
    assert "NSA members" in card and "3D radius graph" in card
    assert "cutoff of 4.5 Å (no cap)" in card and "Trained on non-periodic molecules" in card
    assert "periodic structures" not in card and "per-atom" not in card


def test_card_of_a_bonds_mode_3d_model(tmp_path: Path) -> None:
    """The 3D mode that contains the 2D featuriser says so (bonds, RDKit features,
    perception, atom sums, stereo), not "radius graph" or "enantiomers get the same"."""
    card = _card(
        _artifact(
            tmp_path / "b3d",
            featurizer=FeaturizerConfig("3d", {"include_h": False, "radius_tokens": 3.0}),
            provenance=Provenance(data="qm9.extxyz", split_type="random", periodic=False),
        )
    )
    assert "3D molecular graph (featuriser `3d` version 4, mode `bonds`) of the heavy atoms" in card
    assert "non-bonded pair closer than 3 Å (flagged not a bond)" in card
    assert "RDKit atom features of the 2D featuriser" in card and "rdDetermineBonds" in card
    assert "per-atom sum of the distance Gaussians over all atoms within 5 Å" in card
    assert "tokens are the directed bonds" in card and "enantiomers can differ" in card
    assert "radius graph's" not in card and "enantiomers get the same" not in card


def test_card_of_a_fine_tuned_label_augmented_model(tmp_path: Path) -> None:
    source = tmp_path / "runs" / "pre"
    card = _card(
        _artifact(
            tmp_path / "ft",
            provenance=Provenance(
                finetuned_from=str(source), strategy="full", mode="inductive", fresh_head=True
            ),
            augment=Augmentation("label", "pretrained", (0.1,), (1.0,)),
            sizes_key="sizes",  # fine-tuning writes split sizes under this key
        ),
        root=tmp_path,
    )
    assert "Fine-tuned from the pretrained model `runs/pre`" in card
    assert "strategy `full`, mode `inductive`, head re-initialised" in card
    assert "Label-augmented: the pretrained model's prediction (label), 1 value(s)" in card
    assert "(`pretrained/`)" in card and "train 80, validation 10, test 10" in card
    embed = _card(
        _artifact(
            tmp_path / "ft_embed",
            provenance=Provenance(finetuned_from=str(source), strategy="freeze-encoder"),
            augment=Augmentation("embed", "pretrained", (0.0,) * 4, (1.0,) * 4),
        ),
        root=tmp_path,
    )
    assert "Embedding-augmented: the pretrained model's graph embedding, 4 value(s)" in embed
    assert "head ?" in embed and "strategy `freeze-encoder`" in embed


def test_card_says_what_the_fine_tune_recorded_not_what_its_strategy_is_called() -> None:
    """Training targets made from measured low-fidelity labels are stated from what the
    fine-tune recorded (``metrics.json``'s ``training_targets``), whatever the strategy's name;
    the name itself is only shown."""
    said = "Its training targets used the **measured** low-fidelity labels"
    prov = Provenance(finetuned_from="pre", strategy="delta-measured", mode="inductive")
    config = replace(_config(("y",)), provenance=prov)
    recorded = {"training_targets": {"note": "train: high − (a·low + b) + (a'·x + b')"}}
    assert said in model_card(config, recorded, None, None, None, None, TEXTS)
    assert said not in model_card(config, {}, None, None, None, None, TEXTS)
    renamed = replace(config, provenance=replace(prov, strategy="some-other-name"))
    card = model_card(renamed, recorded, None, None, None, None, TEXTS)
    assert said in card and "strategy `some-other-name`, mode `inductive`" in card


def test_card_paths_relative_to_root_and_no_reproduce_line_by_default(tmp_path: Path) -> None:
    data = tmp_path / "data" / "x.csv"
    directory = _artifact(tmp_path / "m", provenance=Provenance(data=str(data)))
    assert "(`data/x.csv`)" in _card(directory, root=tmp_path)
    card = _card(directory, root=tmp_path / "elsewhere")
    assert f"(`{data}`)" in card and "Reproduce with" not in card
    card = _card(directory, reproduce="make pretrained", notes=["A note."])
    assert "Reproduce with `make pretrained`." in card and "\n- A note.\n" in card
    frame = _artifact(tmp_path / "f", provenance=Provenance(data="<DataFrame>"))
    assert "- Data: d.\n" in _card(frame)


def test_read_metrics_and_card(tmp_path: Path) -> None:
    assert read_metrics(tmp_path) == {} and Artifact(tmp_path).read_card() == ""
    write_metrics(tmp_path, {"test": {"ensemble": {"rmse": 1.0}}})
    assert read_metrics(tmp_path)["test"]["ensemble"]["rmse"] == 1.0
    (tmp_path / "metrics.json").write_text("[1, 2")
    with pytest.raises(ArtifactError, match="corrupt"):
        read_metrics(tmp_path)


def test_per_target_lines_of_a_multitask_model() -> None:
    """A multitask card lists each target's ensemble test metrics with its unit, in the
    targets' order; a one-target model gets no such table."""
    test = {
        "ensemble": {
            "roc_auc/ames": 0.81234,
            "brier/ames": 0.2,
            "roc_auc/bbb": 0.9,
            "roc_auc": 0.85,
        }
    }
    assert per_target_metrics(test, ["bbb", "ames"]) == ["roc_auc", "brier"]
    lines = _section(_rendered(_config(("bbb", "ames"), "classification"), test), "## Test")
    at = lines.index("Per target (ensemble):")
    assert lines[at + 1] == "| target | unit | roc_auc | brier |"
    assert lines[at + 3] == "| `bbb` | probability | 0.900 | – |"
    assert lines[at + 4] == "| `ames` | probability | 0.812 | 0.200 |"
    assert per_target_metrics(test, ["bbb"]) == []
    assert "Per target" not in _rendered(_config(("bbb",), "classification"), test)
