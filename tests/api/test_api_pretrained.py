"""The models shipped in pretrained/: present, small, ensembles with cards and domains."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from molprop.inference import Predictor

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
SHIPPED = {
    "solubility": "regression",
    "lipophilicity": "regression",
    "hydration_free_energy": "regression",
    "bbb_penetration": "classification",
    "homo_lumo_gap": "regression",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_model(name: str) -> None:
    directory = PRETRAINED / name
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    assert size < 10 * 2**20, f"{name} is {size / 2**20:.1f} MB"
    predictor = Predictor.from_pretrained(name)  # found by name
    assert predictor.task_type == SHIPPED[name] and len(predictor.members) >= 3
    assert predictor.domain is not None
    card = (directory / "card.md").read_text()
    test = json.loads((directory / "metrics.json").read_text())["test"]
    metric = "roc_auc" if SHIPPED[name] == "classification" else "rmse"
    assert f"{test['ensemble'][metric]:.3f}" in card and "scaffold" in card.lower()
    out = predictor.predict(["CCO", "C1CC"])
    target = predictor.target_names[0]
    assert out["status"].tolist() == ["ok", "invalid_input"]
    assert math.isfinite(out[target][0]) and math.isnan(out[target][1])
    assert str(out["in_domain"].dtype) == "boolean"  # nullable: no prediction, no flag
    assert out["in_domain"].isna().tolist() == (out["status"] != "ok").tolist()
