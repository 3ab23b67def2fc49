"""The ADMET recipes and the shipped ADMET models: every endpoint of ``data/admet`` in exactly
one model, tables joined on InChIKey without losing or inventing a label, and each shipped model
complete (calibration, domain, percentiles and a card line for every endpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from molprop.pretrained_admet import ADMET, PRETRAINED, endpoint_table, groups, merged_table


def test_every_endpoint_is_in_exactly_one_model_with_its_task() -> None:
    table = endpoint_table()
    seen = [e for g in groups().values() for e in g.endpoints]
    assert sorted(seen) == sorted(table.index) and len(seen) == len(set(seen)) == 29
    for group in groups().values():
        assert {table.loc[e, "task"] for e in group.endpoints} == {group.task_type}


def test_merged_table_keeps_every_label_once() -> None:
    """One row per InChIKey of the group's tables; each endpoint column holds exactly that
    table's labels (as many, the same values by InChIKey) and nothing where it has none."""
    group = groups()["admet_classification"]
    merged = merged_table(group)
    keys = set()
    info = endpoint_table()
    tables = {}
    for name in group.endpoints:
        frame = pd.read_csv(ADMET / f"{name}.csv.gz")
        tables[name] = frame.set_index("smiles")[info.loc[name, "label"]]
        keys |= set(frame["inchikey"])
    assert len(merged) == len(keys)
    for name, labels in tables.items():
        assert merged[name].notna().sum() == len(labels)
    # a molecule from the first table keeps its SMILES and its labels
    first = group.endpoints[0]
    row = merged[merged[first].notna()].iloc[0]
    assert tables[first][row["smiles"]] == row[first]
    assert merged.columns.tolist() == ["smiles", *group.endpoints]


@pytest.mark.parametrize("name", sorted(groups()))
def test_shipped_admet_model_is_complete(name: str) -> None:
    directory = PRETRAINED / name
    if not (directory / "config.json").exists():
        pytest.fail(f"{directory} is not shipped (make pretrained-admet)")
    group = groups()[name]
    config = json.loads((directory / "config.json").read_text())
    assert config["task"]["target_names"] == list(group.endpoints)
    assert config["extra"]["finetuned_from"] == "pretrained/foundation"  # no machine paths
    calibration = json.loads((directory / "calibration.json").read_text())
    # every endpoint is calibrated or listed with the reason (too few validation molecules)
    left = calibration.get("not_calibrated", {})
    assert sorted([*calibration["targets"], *left]) == sorted(group.endpoints)
    assert len(left) <= 1 and all("calibration molecules" in v for v in left.values())
    # fitted on what the recipe says (cross-validation: out of fold, never the test rows)
    fitted = {
        "validation": "validation split",
        "cv": "5-fold scaffold cross-validation of train+val",
    }
    assert calibration["fitted_on"].startswith(fitted[group.calibration])
    reference = json.loads((directory / "reference.json").read_text())
    assert sorted(reference["targets"]) == sorted(group.endpoints)
    assert (directory / "domain.safetensors").stat().st_size > 0
    card = (directory / "card.md").read_text()
    metrics = json.loads((directory / "metrics.json").read_text())["test"]["ensemble"]
    metric = "roc_auc" if group.task_type == "classification" else "mae"
    for endpoint in group.endpoints:
        line = next(ln for ln in card.splitlines() if ln.startswith(f"| `{endpoint}` |"))
        assert f"{metrics[f'{metric}/{endpoint}']:.3f}" in line
    assert len(list(Path(directory, "members").iterdir())) == 2


def test_each_stage_calibrates_as_the_recipe_says(monkeypatch, tmp_path) -> None:
    """``--stage calibrate`` (and a full build) calibrate each model as its recipe says, so a
    recalibration never turns admet_regression's cross-validated calibration back into a
    validation-split one; ``--stage calibrate-cv`` cross-validates whichever is named."""
    import molprop.pretrained_admet as module

    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(module, "calibrate", lambda g, out: calls.append(("validation", g.name)))
    monkeypatch.setattr(
        module, "calibrate_cv", lambda g, out, *a, **k: calls.append(("cv", g.name))
    )
    monkeypatch.setattr(module, "train", lambda g, out, init: calls.append(("train", g.name)))
    for quiet in ("portable_config", "reference", "write_card"):
        monkeypatch.setattr(module, quiet, lambda *a, **k: None)
    names = ["admet_tox21", "admet_regression"]
    assert module.main([*names, "--stage", "calibrate", "--out", str(tmp_path)]) == 0
    assert calls == [("validation", "admet_tox21"), ("cv", "admet_regression")]
    calls.clear()
    assert module.main([*names, "--out", str(tmp_path)]) == 0  # train: validation split first
    assert calls == [
        ("train", "admet_tox21"),
        ("train", "admet_regression"),
        ("cv", "admet_regression"),
    ]
    calls.clear()
    assert module.main(["admet_tox21", "--stage", "calibrate-cv", "--out", str(tmp_path)]) == 0
    assert calls == [("cv", "admet_tox21")]
