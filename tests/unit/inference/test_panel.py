"""Panel: several shipped models answered together, one wide row per input; every endpoint's
columns are exactly what its model predicts alone, a bad row fails alike for every endpoint,
target names must be unique, input columns are kept."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from molprop.errors import ConfigError
from molprop.inference import Predictor
from molprop.inference.panel import (
    ENDPOINT_SUFFIXES,
    PHYSCHEM_COLUMNS,
    ROW_COLUMNS,
    Panel,
    row_status,
)
from molprop.inference.physchem import physchem_frame
from molprop.inference.screen import WorkLimits

REPO = Path(__file__).resolve().parents[3]
ADMET = REPO / "pretrained" / "panels" / "admet.json"
BAD = ["not a smiles", "C1CC", "[Na+].[Cl-]"]


@pytest.fixture(scope="module")
def esol() -> list[str]:
    frame = pd.read_csv(REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz")
    return frame["smiles"].sample(12, random_state=3).tolist()


@pytest.fixture(scope="module")
def admet() -> Panel:
    return Panel.from_name(str(ADMET))


def _same(got: pd.Series, want: pd.Series) -> None:
    np.testing.assert_array_equal(
        got.to_numpy(dtype=np.float64, na_value=np.nan),
        want.to_numpy(dtype=np.float64, na_value=np.nan),
    )


def test_every_endpoint_equals_its_model_alone(admet: Panel, esol: list[str]) -> None:
    smiles = [*esol[:6], BAD[0], *esol[6:], BAD[2]]
    out = admet.predict(smiles, interval=0.8)
    assert out.columns.tolist() == admet.columns
    assert out["smiles"].tolist() == smiles
    for model, predictor in zip(admet.model_names, admet.predictors):
        alone = Predictor.from_pretrained(model).predict(smiles, interval=0.8)
        assert out["status"].tolist() == alone["status"].tolist()
        assert out["error"].tolist() == alone["error"].tolist()
        for target in [e.target for e in admet.endpoints if e.model == model]:
            _same(out[target], alone[target])
            for column in ("_std", "_low", "_high", "_percentile"):
                want = alone[target + column] if target + column in alone else np.nan
                _same(out[target + column], pd.Series(want, index=alone.index, dtype=float))
            _same(out[f"{target}_similarity"], alone["similarity"])
            assert out[f"{target}_in_domain"].tolist() == alone["in_domain"].tolist()
            unit = predictor.config.task.units[predictor.target_names.index(target)]
            assert set(out[f"{target}_unit"]) == {unit}
        ok = alone["status"] == "ok"
        assert ok.sum() == len(esol)
        assert (
            out.loc[ok, "standardized_smiles"].tolist()
            == alone.loc[ok, "standardized_smiles"].tolist()
        )
    # a regression model's interval at the level asked for; the classifier has none
    assert (out["solubility_aqsoldb_low"] < out["solubility_aqsoldb"]).sum() == len(esol)
    assert out["bbb_b3db_low"].isna().all()


def test_a_bad_row_fails_for_every_endpoint_and_the_others_are_whole(admet: Panel) -> None:
    smiles = ["CCO", BAD[0], "c1ccccc1O", BAD[1], BAD[2]]
    out = admet.predict(smiles)
    assert out["status"].tolist() == ["ok", "invalid_input", "ok", "invalid_input", "unsupported"]
    assert "whitespace" in out["error"][1] and "inorganic" in out["error"][4]
    targets = admet.target_names
    for i in (1, 3, 4):
        assert out.loc[i, targets].isna().all()
        assert all(out[f"{t}_in_domain"].isna()[i] for t in targets)
    for i in (0, 2):
        assert out.loc[i, "error"] == "" and out.loc[i, targets].notna().all()
        assert out.loc[i, [f"{t}_similarity" for t in targets]].notna().all()
    # physchem describes what it can read (the salt too), as physchem_frame does
    expected = physchem_frame(smiles)
    assert out["molecular_weight"].tolist()[:1] == expected["molecular_weight"].tolist()[:1]
    assert out["described_smiles"].tolist()[4] == "[Na+].[Cl-]"
    assert pd.isna(out["described_smiles"][1])


def test_columns_stay_in_panel_order_for_any_number_of_models(esol: list[str]) -> None:
    # two models that screen alike (neither records its training elements)
    panel = Panel.from_models(["bbb_penetration", "homo_lumo_gap"])
    assert panel.target_names == ["bbb_probability", "gap_ev"] and panel.screens_alike
    out = panel.predict(esol[:3])
    endpoint = [t + s for t in panel.target_names for s in ("", *ENDPOINT_SUFFIXES)]
    assert out.columns.tolist() == [*ROW_COLUMNS, *endpoint, *PHYSCHEM_COLUMNS]
    one = Panel.from_models(["homo_lumo_gap"], name="one")
    assert one.predict(esol[:3])["gap_ev"].tolist() == out["gap_ev"].tolist()
    lean = Panel("lean", panel.predictors, physchem=False)
    assert lean.predict(esol[:3]).columns.tolist() == [*ROW_COLUMNS, *endpoint]


def test_duplicate_target_names_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"target 'gap_ev' is predicted by 'homo_lumo_gap_3d' "
                       r"and by 'homo_lumo_gap'"):  # fmt: skip
        Panel.from_models(["homo_lumo_gap", "homo_lumo_gap_3d"])
    solubility = Predictor.from_pretrained("solubility")
    with pytest.raises(ConfigError, match="target 'logS' is predicted by 'solubility' twice"):
        Panel("twice", (solubility, solubility))
    with pytest.raises(ConfigError, match="has no models"):
        Panel("empty", ())


def test_served_by_picks_the_model_of_a_shared_target_in_its_first_place(
    admet: Panel, esol: list[str]
) -> None:
    # admet_regression and hydration_free_energy both predict hydration_free_energy; the panel
    # file's served_by takes it from the FreeSolv model, in admet_regression's column place
    regression = admet.predictors[admet.model_names.index("admet_regression")]
    assert admet.target_names[:5] == regression.target_names[:5]
    assert admet.endpoints[3].model == "hydration_free_energy"
    assert admet.target_names.count("hydration_free_energy") == 1
    smiles = esol[:4]
    out = admet.predict(smiles)
    alone = Predictor.from_pretrained("hydration_free_energy").predict(smiles)
    for column in ("", "_std", "_low", "_high", "_percentile"):
        _same(out["hydration_free_energy" + column], alone["hydration_free_energy" + column])
    _same(out["hydration_free_energy_similarity"], alone["similarity"])
    assert (out["hydration_free_energy_low"] < out["hydration_free_energy"]).all()  # calibrated
    head = regression.predict(smiles)["hydration_free_energy"]
    assert not np.allclose(out["hydration_free_energy"], head)  # not admet_regression's head


@pytest.mark.parametrize(
    "served_by,message",
    [
        ({"gap_ev": "solubility"}, r"served_by names 'solubility' for 'gap_ev', but it does not"),
        ({"gap_ev": "lipophilicity"}, r"'lipophilicity' for 'gap_ev', but it is no model of it"),
        ({"gap_ev": "homo_lumo_gap", "logS": "homo_lumo_gap"}, "does not predict it"),
    ],
)
def test_served_by_must_name_a_model_of_the_panel_that_predicts_the_target(
    served_by: dict[str, str], message: str
) -> None:
    models = [Predictor.from_pretrained(m) for m in ("homo_lumo_gap", "solubility")]
    with pytest.raises(ConfigError, match=message):
        Panel("p", tuple(models), served_by=served_by)


def test_a_model_whose_every_target_is_served_by_another_is_refused() -> None:
    gap, gap3d = (Predictor.from_pretrained(m) for m in ("homo_lumo_gap", "homo_lumo_gap_3d"))
    with pytest.raises(ConfigError, match=r"model\(s\) \['homo_lumo_gap'\] answer no endpoint"):
        Panel("p", (gap, gap3d), served_by={"gap_ev": "homo_lumo_gap_3d"})


def test_a_target_named_like_a_physchem_or_row_column_is_refused() -> None:
    solubility = Predictor.from_pretrained("solubility")
    for name in ("tpsa", "status", "logS_unit"):
        task = dataclasses.replace(solubility.config.task, target_names=(name,))
        renamed = Predictor(
            solubility.directory,
            dataclasses.replace(solubility.config, task=task),
            solubility.members,
        )
        others = (solubility,) if name == "logS_unit" else ()
        with pytest.raises(ConfigError, match=f"column\\(s\\) \\['{name}'\\] would appear twice"):
            Panel("clash", (*others, renamed))


def test_an_interval_a_model_cannot_serve_is_refused_naming_it(admet: Panel) -> None:
    with pytest.raises(ConfigError, match=r"model 'admet_regression': interval level 0.999"):
        admet.predict(["CCO"], interval=0.999)


#: elements some shipped ADMET models saw in training and others did not (Te, Ge, Sb: only the
#: regression model's; Bi: only the Tox21 model's; At: none), explicit hydrogens, salts, metals
#: and bad rows
ELEMENT_EDGES = [
    "CC[Te]CC",
    "C[Ge](C)(C)C",
    "CC[Sb](CC)CC",
    "c1ccc2c(c1)[se]cc2",
    "CB(O)O",
    "C[Si](C)(C)C",
    "C[As](C)C",
    "CC(=O)O[Bi](OC(C)=O)OC(C)=O",
    "[2H]C([2H])([2H])O",
    "[H]OC([H])([H])C",
    "C[N+](C)(C)C.[Br-]",
    "CC(=O)[O-].[Na+]",
    "CCO[Tc]",
    "C[At]",
    "[At]CC[Te]CC",
    *BAD,
]


def test_one_featurisation_gives_each_model_its_own_graphs_and_refusals(
    admet: Panel, esol: list[str]
) -> None:
    """The panel featurises once per featuriser through the union of its models' training
    elements; every model still gets exactly the graphs and the refusals its own checks give,
    also for elements only some of the models saw."""
    assert len({p.screened.elements for p in admet.predictors}) > 1  # the case under test
    smiles = [*esol[:4], *ELEMENT_EDGES]
    shared = admet._featurize(smiles, WorkLimits(), None)
    refused_by_some = 0
    for predictor, items in zip(admet.predictors, shared):
        own = predictor.featurize_smiles(smiles)
        assert len(items) == len(own)
        for got, want in zip(items, own):
            assert type(got) is type(want)
            if isinstance(want, Exception):
                assert str(got) == str(want)
                continue
            assert got.smiles == want.smiles
            for name in ("x", "edge_index", "edge_attr", "fingerprint"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        refused_by_some += sum(isinstance(item, Exception) for item in own)
    ok = [[not isinstance(i, Exception) for i in items] for items in shared]
    assert any(a != b for a, b in zip(ok[0], ok[1])), "no row told the models apart"
    assert refused_by_some > 0


def test_models_that_screen_differently_keep_a_status_per_endpoint() -> None:
    """A 3D model (it embeds a conformer) beside a 2D one: they read a SMILES differently, so
    each endpoint has its model's own status and error besides the row's."""
    panel = Panel.from_models(["solubility", "homo_lumo_gap_3d"])
    assert not panel.screens_alike
    assert {"logS_status", "logS_error", "gap_ev_status", "gap_ev_error"} <= set(panel.columns)
    smiles = ["CCO", "not a smiles", "c1ccccc1O"]
    out = panel.predict(smiles)
    alone = Predictor.from_pretrained("homo_lumo_gap_3d").predict(smiles)
    _same(out["gap_ev"], alone["gap_ev"])
    assert out["gap_ev_status"].tolist() == alone["status"].tolist()
    assert out["status"].tolist() == ["ok", "invalid_input", "ok"]


def test_row_status_when_models_disagree() -> None:
    statuses = np.array([["ok", "ok"], ["invalid_input", "invalid_input"], ["ok", "error"]])
    errors = np.array([["", ""], ["bad", "bad"], ["", "model failure: x"]])
    status, error = row_status(statuses, errors, ["a", "b"])
    assert status == ["ok", "invalid_input", "error"]
    assert error == ["", "bad", "b: model failure: x"]
    status, error = row_status(
        np.array([["unsupported", "error"]]), np.array([["no Se", "nan"]]), ["a", "b"]
    )
    assert status == ["unsupported"] and error == ["a: no Se; b: nan"]


def test_predict_frame_keeps_every_input_column(admet: Panel) -> None:
    inputs = pd.DataFrame(
        {
            "compound": ["ethanol", "broken", "phenol"],
            "smi": ["CCO", "C1CC", "c1ccccc1O"],
            "solubility_aqsoldb": ["1.10", "", "-0.04"],  # measured, under the target's name
            "status": ["bought", "bought", "made"],
        }
    )
    out = admet.predict_frame(inputs, "smi")
    assert out.columns[:4].tolist() == ["compound", "smi", "solubility_aqsoldb", "status"]
    assert out[inputs.columns].equals(inputs)
    assert out["pred_status"].tolist() == ["ok", "invalid_input", "ok"]
    alone = admet.predict(inputs["smi"].tolist())
    _same(out["pred_solubility_aqsoldb"], alone["solubility_aqsoldb"])
    unit = "solubility_aqsoldb_unit"
    assert "smiles" not in out and out[unit].tolist() == alone[unit].tolist()


def test_a_multitask_model_gives_one_endpoint_per_target(tmp_path: Path) -> None:
    """A two-target model (tiny, real QM9 rows) beside a shipped one: three endpoints, the
    multitask model's domain repeated for each of its targets."""
    from molprop.models.config import TrainConfig
    from molprop.training.train import TrainRequest, run_train

    frame = pd.read_csv(REPO / "data" / "qm9" / "micro_qm9.csv.gz").head(200)
    run_train(
        TrainRequest(
            data=frame[["smiles", "gap", "mu"]].astype(str),
            smiles_column="smiles",
            target_columns=["gap", "mu"],
            out=tmp_path / "qm9",
            split_type="random",
            model={"hidden_dim": 16, "heads": 2, "num_seeds": 4, "layers": "MSP"},
            train=TrainConfig(epochs=1, batch_size=64, ensemble_size=2),
            units=["Ha", "D"],
            progress=False,
        )
    )
    panel = Panel("mixed", (Predictor.from_pretrained("solubility"),
                            Predictor.from_pretrained(tmp_path / "qm9")))  # fmt: skip
    assert panel.target_names == ["logS", "gap", "mu"]
    assert [e.model for e in panel.endpoints] == ["solubility", "qm9", "qm9"]
    smiles = frame["smiles"].tolist()[6:11] + ["C1CC"]
    out = panel.predict(smiles)
    alone = Predictor.from_pretrained(tmp_path / "qm9").predict(smiles)
    for target, unit in (("gap", "Ha"), ("mu", "D")):
        _same(out[target], alone[target])
        _same(out[f"{target}_std"], alone[f"{target}_std"])
        _same(out[f"{target}_similarity"], alone["similarity"])
        assert set(out[f"{target}_unit"]) == {unit}
    assert out["status"].tolist() == ["ok"] * 5 + ["invalid_input"]
    # a new model records its training elements, the shipped ones do not: they screen apart
    assert panel.screens_alike == (panel.predictors[1].screened.elements is None)
    assert ("gap_status" in out) == (not panel.screens_alike)


def test_the_physchem_block_computed_in_another_process_gives_the_same_frame(
    admet: Panel, esol: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without workers, the CLI's pool computes the physchem block in a spawned process beside
    the models: the frame is exactly the one-process frame; a failed helper process costs
    nothing but time (the block is computed here)."""
    from concurrent.futures import Future

    from molprop.inference import panel_pool
    from molprop.inference.panel_pool import PanelPool

    smiles = [*esol, BAD[0], *ELEMENT_EDGES[:3]]
    alone = admet.predict(smiles)
    monkeypatch.setattr(panel_pool, "PHYSCHEM_APART_MIN_ROWS", 5)
    monkeypatch.setattr(panel_pool.os, "cpu_count", lambda: 2)
    with PanelPool(admet, "admet", "torch", 0) as pool:
        apart = pool.predict(smiles, 0.9, 256)
        assert pool.physchem_executor is not None
        assert pool._physchem_apart(smiles[:4]) is None  # too few rows to pay
    pd.testing.assert_frame_equal(apart, alone)

    class Broken:
        def submit(self, *args: object) -> Future:
            failed: Future = Future()
            failed.set_exception(RuntimeError("process died"))
            return failed

    pd.testing.assert_frame_equal(admet.predict(smiles, physchem_executor=Broken()), alone)
