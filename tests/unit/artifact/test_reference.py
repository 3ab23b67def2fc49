"""Percentiles among approved drugs: the stored quantiles reproduce from the shipped set, a
percentile is a monotone 0-100 map, a corrupt file is refused with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.artifact.reference import LEVELS, Reference
from molprop.errors import ArtifactError
from molprop.inference import Predictor
from molprop.pretrained_recipes import PRETRAINED, REFERENCE_NAME
from molprop.training.reference import APPROVED_DRUGS, fit_reference


def test_percentile_is_monotone_bounded_and_keeps_nan() -> None:
    rng = np.random.default_rng(0)
    ref = Reference.fit("r", "0", {"y": rng.normal(size=500)})
    grid = np.linspace(-5, 5, 201)
    p = ref.percentile("y", grid)
    assert (np.diff(p) >= 0).all() and p[0] == 0 and p[-1] == 100
    assert ref.percentile("y", np.array([0.0]))[0] == pytest.approx(50, abs=5)
    assert np.isnan(ref.percentile("y", np.array([np.nan]))).all()
    tied = Reference.fit("t", "0", {"y": np.array([0.0, 0, 0, 1, 2, 3])})
    assert 0 < tied.percentile("y", np.array([0.0]))[0] < 50  # ties: the middle of their levels


def test_corrupt_reference_is_refused_with_the_reason(tmp_path: Path) -> None:
    good = Reference.fit("r", "0", {"y": np.arange(10.0)}).to_dict()
    for change, reason in (
        (lambda d: d["targets"]["y"]["quantiles"].__setitem__(3, float("nan")), "finite"),
        (lambda d: d["targets"]["y"]["quantiles"].reverse(), "non-decreasing"),
        (lambda d: d["targets"]["y"]["quantiles"].pop(), "201"),
        (lambda d: d.__setitem__("version", 9), "unsupported"),
    ):
        data = json.loads(json.dumps(good))
        change(data)
        (tmp_path / "reference.json").write_text(json.dumps(data))
        with pytest.raises(ArtifactError, match=reason):
            Reference.load(tmp_path)


def test_shipped_percentiles_reproduce_and_rank_the_approved_drugs(tmp_path: Path) -> None:
    shipped = Reference.load(Path(PRETRAINED) / "solubility")
    assert shipped is not None and len(shipped.quantiles["logS"]) == len(LEVELS)
    copy = tmp_path / "solubility"
    shutil.copytree(Path(PRETRAINED) / "solubility", copy)
    (copy / "reference.json").unlink()
    again = fit_reference(copy, name=REFERENCE_NAME)
    assert again.n == shipped.n and again.sha256 == shipped.sha256
    np.testing.assert_allclose(again.quantiles["logS"], shipped.quantiles["logS"], rtol=1e-5)
    drugs = pd.read_csv(APPROVED_DRUGS)["smiles"].sample(300, random_state=0).tolist()
    out = Predictor.from_pretrained(Path(PRETRAINED) / "solubility").predict(drugs)
    ok = out["status"] == "ok"
    pct = out.loc[ok, "logS_percentile"]
    assert out.columns.get_loc("logS_percentile") == out.columns.get_loc("logS_unit") + 1
    assert pct.between(0, 100).all() and 35 < pct.median() < 65  # the drugs rank among drugs
    order = np.argsort(out.loc[ok, "logS"].to_numpy())
    assert (np.diff(pct.to_numpy()[order]) >= 0).all()  # a higher logS, a higher percentile
    assert out.loc[~ok, "logS_percentile"].isna().all()


@pytest.mark.parametrize(
    "name", ["solubility", "lipophilicity", "hydration_free_energy", "bbb_penetration"]
)
def test_every_shipped_model_has_percentiles_on_its_card(name: str) -> None:
    directory = Path(PRETRAINED) / name
    assert Reference.load(directory) is not None
    assert "## Percentiles among approved drugs" in (directory / "card.md").read_text()
