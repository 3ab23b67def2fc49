"""Cross-validated calibration (``molprop train --calibration cv``, ``--stage calibrate-cv``):
the calibration is fitted on out-of-fold predictions of train + validation only — no test row
is trained on, predicted for calibration or fitted on; each molecule is predicted by the
ensemble of the fold that held it out, trained without it and without its scaffold; the
largest scaffold sets stay in every fold's training; the artifact's weights do not change."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import molprop.training.cv_calibrate as cv_module
from molprop.artifact import Artifact
from molprop.artifact.calibration import Calibration
from molprop.data.splits import murcko_scaffold
from molprop.models.config import TrainConfig

REPO = Path(__file__).resolve().parents[3]
ESOL = REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz"
TINY = {"hidden_dim": 16, "heads": 2, "layers": "MSP", "num_seeds": 2, "head_hidden": 16}


@pytest.fixture
def spies(monkeypatch):
    """Records every fold's training / early-stopping molecules, the molecules each fold
    predicts, and what reaches the fitting function."""
    record: dict[str, list] = {
        "train": [],
        "val": [],
        "predicted": [],
        "fit": [],
        "domain": [],
        "flags": [],
    }
    real_fit_ensemble, real_raw = cv_module.fit_ensemble, cv_module.raw_predictions
    real_fit_calibration = cv_module.fit_calibration

    def fit_ensemble(make, train, val, cfg, out, progress, **kw):
        record["train"].append([id(g) for g in train.graphs])
        record["val"].append([id(g) for g in val.graphs])
        record["cfg"] = cfg
        return real_fit_ensemble(make, train, val, cfg, out, progress, **kw)

    def raw_predictions(predictor, data):
        record["predicted"].append([id(g) for g in data.items])
        raw = real_raw(predictor, data)
        record["flags"].append((list(data.smiles), raw.in_domain))
        return raw

    real_domain = Artifact.add_domain

    def add_domain(artifact, smiles):
        if artifact.directory.name.startswith("fold_"):  # a fold model's (not the model's own)
            record["domain"].append(list(smiles))
        return real_domain(artifact, smiles)

    def fit_calibration(task_type, names, targets, mean, std, in_domain, **kw):
        record["fit"].append(
            {"targets": np.array(targets), "mean": np.array(mean), "in_domain": in_domain}
        )
        return real_fit_calibration(task_type, names, targets, mean, std, in_domain, **kw)

    monkeypatch.setattr(cv_module, "fit_ensemble", fit_ensemble)
    monkeypatch.setattr(cv_module, "raw_predictions", raw_predictions)
    monkeypatch.setattr(cv_module, "fit_calibration", fit_calibration)
    monkeypatch.setattr(Artifact, "add_domain", add_domain)
    return record


def _train(frame: pd.DataFrame, out: Path, seed: int = 0, **request) -> None:
    """A tiny 2-member ESOL model (1 epoch) in ``out``."""
    from molprop.training.train import TrainRequest, run_train

    train = TrainConfig(epochs=1, batch_size=64, ensemble_size=2, seed=seed)
    run_train(
        TrainRequest(
            frame, "smiles", ["logp"], out, model=dict(TINY), train=train, progress=False, **request
        )
    )


def _digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.glob("members/*/model.safetensors")):
        h.update(path.read_bytes())
    return h.hexdigest()


def _one_epoch_folds(monkeypatch) -> None:
    """Cut every fold training (through the ``spies`` fixture's recording fit) to 1 epoch."""
    from dataclasses import replace

    real = cv_module.fit_ensemble
    monkeypatch.setattr(
        cv_module,
        "fit_ensemble",
        lambda make, tr, va, cfg, o, p, **kw: real(
            make, tr, va, replace(cfg, epochs=1), o, p, **kw
        ),
    )


def test_cv_calibration_is_out_of_fold_and_never_sees_test_rows(
    tmp_path: Path, spies, monkeypatch
) -> None:
    import molprop.training.train as train_module

    frame = pd.read_csv(ESOL, dtype=str, keep_default_na=False).head(200)
    tables = []
    real_load = train_module.load_table

    def keep_table(spec):  # the featurised table, to map graph ids back to rows
        tables.append(real_load(spec))
        return tables[-1]

    monkeypatch.setattr(train_module, "load_table", keep_table)
    out = tmp_path / "m"
    _train(frame, out, seed=3, calibration="cv", cv_folds=2)
    table = tables[0]
    row_of = {id(g): i for i, g in enumerate(table.graphs)}
    split = pd.read_csv(out / "split.csv", dtype={"split": str})["split"].to_numpy()
    test_rows = set(np.flatnonzero(split == "test"))
    trainval = np.flatnonzero(split != "test")
    assert len(spies["train"]) == len(spies["predicted"]) == 2  # one ensemble per fold
    assert spies["cfg"].ensemble_size == 2 and spies["cfg"].seed == 3  # the model's recipe

    held_all: list[int] = []
    for train_ids, val_ids, pred_ids in zip(spies["train"], spies["val"], spies["predicted"]):
        train = {row_of[i] for i in train_ids}
        val = {row_of[i] for i in val_ids}
        held = [row_of[i] for i in pred_ids]
        assert not (train | val | set(held)) & test_rows  # no test row anywhere
        assert not (train | val) & set(held)  # predicted out of fold
        fold_scaffolds = {murcko_scaffold(table.smiles[i]) for i in held}
        trained_scaffolds = {murcko_scaffold(table.smiles[i]) for i in train | val}
        assert not fold_scaffolds & trained_scaffolds  # scaffold-grouped
        assert not train & val and val  # the fold's own early-stopping hold-out
        held_all += held
    assert len(held_all) == len(set(held_all))  # each molecule held out once

    # the largest scaffold sets (> 1/18 of train+val) stay in every fold's training
    scaffolds = pd.Series([murcko_scaffold(table.smiles[i]) for i in trainval])
    counts = scaffolds.value_counts()
    big = set(counts.index[counts > len(trainval) / 18])
    assert big  # ESOL's acyclic and benzene sets
    big_rows = {int(r) for r, s in zip(trainval, scaffolds) if s in big}
    for train_ids, val_ids in zip(spies["train"], spies["val"]):
        assert big_rows <= {row_of[i] for i in train_ids + val_ids}
    assert set(held_all) == set(trainval.tolist()) - big_rows

    # the fit sees exactly the held-out molecules' labels and their out-of-fold means
    y = np.asarray(table.targets[:, 0], dtype=float)
    assert len(spies["fit"]) == 1
    got = spies["fit"][0]
    assert np.array_equal(np.sort(got["targets"][:, 0]), np.sort(y[held_all]))
    stored = Calibration.load(out)
    assert stored.n == len(held_all)
    assert stored.fitted_on.startswith(f"2-fold scaffold cross-validation of train+val, {stored.n}")
    metrics = json.loads((out / "metrics.json").read_text())["calibration"]
    assert metrics["cross_validation"]["held_out_molecules"] == stored.n
    assert metrics["test"]["logp"]["n"] == len(test_rows)
    # out-of-fold residuals are not the artifact's own (in-sample for the training rows)
    residuals = stored.targets["logp"].residuals
    assert np.array_equal(np.sort(residuals), np.sort(got["targets"][:, 0] - got["mean"][:, 0]))

    # in_domain: of the fold model that predicted the molecule (its training molecules' domain)
    from molprop.artifact.domain import ApplicabilityDomain

    assert len(spies["domain"]) == 2
    flags = []
    for train_ids, domain_smiles, (held_smiles, got_flags) in zip(
        spies["train"], spies["domain"], spies["flags"]
    ):
        assert sorted(domain_smiles) == sorted(table.smiles[row_of[i]] for i in train_ids)
        expected = ApplicabilityDomain.fit(domain_smiles).in_domain(held_smiles)
        assert np.array_equal(got_flags, expected)
        flags += list(expected)
    assert sorted(np.asarray(got["in_domain"]).tolist()) == sorted(flags)
    assert sorted(stored.targets["logp"].in_domain.tolist()) == sorted(int(f) for f in flags)

    # novelty (the default difficulty reads it): 1 - max similarity to the training molecules
    # of the fold model that predicted the molecule, not to the artifact's own training split
    novelties = []
    for domain_smiles, (held_smiles, _) in zip(spies["domain"], spies["flags"]):
        novelties += list(1.0 - ApplicabilityDomain.fit(domain_smiles).similarity(held_smiles))
    target = stored.targets["logp"]
    assert target.difficulty == "std+novelty" and target.novelty is not None
    assert np.allclose(np.sort(target.novelty), np.sort(novelties))
    own = 1.0 - ApplicabilityDomain.load(out).similarity([table.smiles[i] for i in held_all])
    assert not np.allclose(np.sort(target.novelty), np.sort(own))  # 0 for the training rows


def test_cli_calibrate_cv_data_keeps_the_weights(tmp_path: Path, capsys) -> None:
    """``molprop calibrate --model DIR --cv-data TABLE`` rewrites the calibration only (new
    version, weights byte-identical, fold models in --cv-work, none next to the model), and a
    model whose start is not here (fine-tuned from a model that is gone) is refused, naming it."""
    from dataclasses import replace

    from molprop.artifact.store import load_config
    from molprop.cli.main import main
    from molprop.errors import ConfigError

    frame = pd.read_csv(ESOL, dtype=str, keep_default_na=False).iloc[300:520]
    out = tmp_path / "m"
    _train(frame, out)
    before, old = _digest(out), Calibration.load(out)
    table = tmp_path / "train.csv"
    frame.to_csv(table, index=False)
    argv = ["calibrate", "--model", str(out), "--cv-data", str(table), "--target-column", "logp"]
    argv += ["--cv-folds", "2", "--cv-work", str(tmp_path / "w"), "--threads", "1"]
    assert main(argv) == 0
    assert _digest(out) == before
    new = Calibration.load(out)
    report = json.loads((out / "metrics.json").read_text())["calibration"]
    assert new.n == report["n"] == report["cross_validation"]["held_out_molecules"] != old.n
    assert new.fitted_on.startswith(f"2-fold scaffold cross-validation of train.csv, {new.n} ")
    assert load_config(out).version == "2"
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["fold_0", "fold_1"]
    assert not list(out.glob("fold_*"))

    config = load_config(out)
    gone = str(tmp_path / "no_such_start")
    finetuned = replace(config, provenance=replace(config.provenance, finetuned_from=gone))
    with pytest.raises(ConfigError, match="no_such_start.*which is not here"):
        cv_module.check_retrainable(finetuned)


def test_recipe_stage_calibrate_cv_uses_train_and_val_of_the_shipped_split(
    tmp_path: Path, spies, monkeypatch
) -> None:
    """``--stage calibrate-cv`` on a copy of the shipped hydration free energy model (fold
    trainings cut to 1 epoch here): 5 folds over its train + validation rows (test rows never
    trained on, predicted or fitted), the shipped recipe, weights byte-identical; the
    calibration, metrics.json and the card say what it was fitted on; a kept work directory's
    fold models are reused. The shipped model is fine-tuned from the foundation model, and so
    is every fold member (the foundation's encoder, a fresh head), found by name although the
    copy's recorded start is a path relative to the repository."""
    import shutil
    from dataclasses import replace

    import molprop.pretrained_recipes as recipes_module
    from molprop.artifact.resolve import shipped_models_dir
    from molprop.artifact.store import load_config
    from molprop.pretrained_recipes import RECIPES, main, train_config

    recipe = RECIPES["hydration_free_energy"]
    models = tmp_path / "models"
    shutil.copytree(shipped_models_dir() / recipe.name, models / recipe.name)
    out = models / recipe.name
    config = load_config(out)
    assert config.provenance.finetuned_from == "pretrained/foundation"
    starts: list[tuple[str, int]] = []
    real_member = cv_module.InitSource.member

    def member(source, model_config, m, seed):
        starts.append((source.directory.name, m))
        return real_member(source, model_config, m, seed)

    monkeypatch.setattr(cv_module.InitSource, "member", member)
    monkeypatch.chdir(tmp_path)  # the recorded relative path does not lead there
    before = _digest(out)
    _one_epoch_folds(monkeypatch)
    argv = [
        recipe.name,
        "--stage",
        "calibrate-cv",
        "--out",
        str(models),
        "--work",
        str(tmp_path / "w"),
    ]
    read: list = []  # the sets the stage reads (kept alive: their graph ids stay valid)
    real_sets = recipes_module.split_sets

    def split_sets(*args):
        read.append(real_sets(*args))
        return read[-1]

    monkeypatch.setattr(recipes_module, "split_sets", split_sets)
    assert main(argv) == 0
    assert spies["cfg"] == replace(train_config(recipe), epochs=1)
    trainval, test = read[0]
    assert len(trainval) == 577 and len(test) == 65  # split.csv: 513 train + 64 val, 65 test
    test_ids = {id(g) for g in test.items}
    index = {id(g): i for i, g in enumerate(trainval.items)}
    assert len(spies["train"]) == 5
    members = config.n_members
    assert starts == [("foundation", m) for _ in range(5) for m in range(members)]
    held = []
    for ids in spies["train"] + spies["val"] + spies["predicted"]:
        assert not set(ids) & test_ids
    for ids in spies["predicted"]:
        held += [index[i] for i in ids]
    assert len(held) == len(set(held))
    y = trainval.targets[:, 0]
    assert np.array_equal(np.sort(spies["fit"][0]["targets"][:, 0]), np.sort(y[held]))
    assert _digest(out) == before  # weights unchanged
    cal = Calibration.load(out)
    assert cal.n == len(held) and "5-fold scaffold cross-validation of train+val" in cal.fitted_on
    metrics = json.loads((out / "metrics.json").read_text())["calibration"]
    assert (
        metrics["fitted_on"] == cal.fitted_on
        and metrics["test"]["hydration_free_energy"]["n"] == 65
    )
    assert "5-fold scaffold cross-validation" in (out / "card.md").read_text()
    # rerun: every fold model is reused, nothing retrained
    n_trained = len(spies["train"])
    assert main(argv) == 0
    assert len(spies["train"]) == n_trained


def test_folds_shared_between_runs_are_trained_once_and_fit_nothing(
    tmp_path: Path, spies, monkeypatch
) -> None:
    """``only_folds`` (``--folds``) trains just those fold models into the kept work directory
    and leaves the model's calibration alone; the run that calibrates then reuses them and
    trains only the others (a copy of the shipped hydration model, 1-epoch folds)."""
    import shutil
    from dataclasses import replace

    from molprop.artifact.resolve import shipped_models_dir
    from molprop.pretrained_recipes import RECIPES, split_sets

    recipe = RECIPES["hydration_free_energy"]
    out = tmp_path / recipe.name
    shutil.copytree(shipped_models_dir() / recipe.name, out)
    _one_epoch_folds(monkeypatch)
    calibration = (out / "calibration.json").read_bytes()
    (trainval,) = split_sets(recipe, out, ("train+val",))
    work = tmp_path / "w"
    cv = cv_module.CrossValidation(work_dir=work, threads=1, only_folds=(0, 3))
    assert cv_module.train_folds(out, trainval, cv) == [0, 3]
    assert sorted(p.name for p in work.iterdir()) == ["fold_0", "fold_3"]
    assert len(spies["train"]) == 2 and spies["predicted"] == [] and spies["fit"] == []
    assert (out / "calibration.json").read_bytes() == calibration
    with pytest.raises(cv_module.ConfigError, match="train_folds"):
        cv_module.fit_cross_validated(out, trainval, cv)
    cv_module.calibrate_artifact_cv(out, trainval, None, replace(cv, only_folds=None))
    assert len(spies["train"]) == 5  # folds 1, 2 and 4 trained, 0 and 3 reused
    assert len(spies["predicted"]) == 5 and len(spies["fit"]) == 1
    assert (out / "calibration.json").read_bytes() != calibration
