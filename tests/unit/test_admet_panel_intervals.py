"""The shipped ``admet`` panel gives every regression endpoint a calibrated 90 % interval, and
what is claimed about the hydration free energy interval (held-out coverage, its Clopper–Pearson
interval, on docs/results/admet.md) is what its model does on molecules it never trained on."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.artifact.coverage import clopper_pearson
from molprop.artifact.panel import endpoint_owners, read_panel
from molprop.chem.smiles import inchikey
from molprop.inference import Predictor
from molprop.training.calibration_fit import MIN_CALIBRATION

REPO = Path(__file__).resolve().parents[2]
PRETRAINED = REPO / "pretrained"
PANEL = read_panel(PRETRAINED / "panels" / "admet.json")
HYDRATION = "hydration_free_energy"


def _owners() -> dict[str, str]:
    """target -> the model that answers it in the shipped panel (from the files, no loading)."""
    targets = [
        (m, json.loads((PRETRAINED / m / "config.json").read_text())["task"]["target_names"])
        for m in PANEL.models
    ]
    return dict(endpoint_owners(targets, PANEL.served_by))


def test_every_regression_endpoint_of_the_panel_has_a_calibrated_interval() -> None:
    owners = _owners()
    assert len(owners) == 29 and owners[HYDRATION] == HYDRATION
    regression = 0
    for target, model in owners.items():
        directory = PRETRAINED / model
        config = json.loads((directory / "config.json").read_text())
        assert json.loads((directory / "reference.json").read_text())["targets"][target]
        assert (directory / "domain.safetensors").stat().st_size > 0
        assert f"`{target}`" in (directory / "card.md").read_text()
        if config["task"]["task_type"] != "regression":
            continue
        regression += 1
        calibration = json.loads((directory / "calibration.json").read_text())
        entry = calibration["targets"].get(target)
        assert entry, f"{target} ({model}) has no interval"
        assert entry["kind"] == "conformal" and entry["n"] >= MIN_CALIBRATION
        # a finite 90 % interval needs ceil((n + 1) * 0.9) <= n calibration scores
        assert math.ceil((entry["n"] + 1) * 0.9) <= entry["n"]
    assert regression == 14


def test_the_hydration_interval_covers_held_out_molecules_as_claimed() -> None:
    model = _owners()[HYDRATION]
    directory = PRETRAINED / model
    split = pd.read_csv(directory / "split.csv", dtype={"smiles": str, "split": str})
    test = split.loc[split["split"] == "test", "smiles"].tolist()
    seen = {inchikey(s) for s in split.loc[split["split"] != "test", "smiles"]}
    keys = [inchikey(s) for s in test]
    assert not seen & set(keys)  # never scored on a molecule it trained or calibrated on
    table = pd.read_csv(REPO / "data" / "admet" / f"{HYDRATION}.csv.gz")
    labels = dict(zip(table["inchikey"], table["dG_hyd_kcal_per_mol"]))
    y = np.array([labels[k] for k in keys])
    out = Predictor.from_pretrained(directory).predict(test, interval=0.9)
    low, high = out[f"{HYDRATION}_low"].to_numpy(), out[f"{HYDRATION}_high"].to_numpy()
    assert np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()
    k, n = int(((low <= y) & (y <= high)).sum()), len(y)
    cp_low, cp_high = clopper_pearson(k, n)
    assert cp_low <= 0.9 <= cp_high, f"coverage {k}/{n} misses 0.90"
    # the model's own record and the results page say the same
    claimed = json.loads((directory / "metrics.json").read_text())["calibration"]["test"]
    entry = claimed[HYDRATION]["levels"]["0.9"]
    assert entry["n"] == n and round(entry["coverage"] * n) == k
    page = (REPO / "docs" / "results" / "admet.md").read_text()
    row = next(ln for ln in page.splitlines() if ln.startswith(f"| {HYDRATION} | {model} |"))
    shown = re.search(r"([\d.]+) \[([\d.]+), ([\d.]+)\], n (\d+): holds", row)
    assert shown, row
    assert [float(v) for v in shown.groups()[:3]] == [
        round(k / n, 3),
        round(cp_low, 3),
        round(cp_high, 3),
    ]
    assert int(shown.group(4)) == n
