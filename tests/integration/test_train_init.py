"""``molprop train --init``: a new task's model starts from a trained artifact's encoder +
readout with a fresh head, the architecture and featuriser taken from the artifact; flags that
disagree with it are errors naming the flag; ``--init none`` is a random start."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from molprop.artifact.resolve import resolve_model
from molprop.artifact.store import load_config, member_path
from molprop.cli.main import build_parser, main
from molprop.cli.train import init_settings
from molprop.errors import ArtifactError, ConfigError

LOADED = ("encoder.", "readout.")


@pytest.fixture(scope="module")
def lipo60(tmp_path_factory, data_dir) -> str:
    """The first 60 rows of Lipophilicity (a task the solubility model never saw)."""
    path = tmp_path_factory.mktemp("lipo") / "lipo60.csv"
    frame = pd.read_csv(data_dir / "moleculenet" / "lipo_chemprop.csv.gz").head(60)
    frame.to_csv(path, index=False)
    return str(path)


def train(lipo60: str, out, *extra: str) -> int:
    args = ["train", "--data", lipo60, "--target-columns", "lipo", "--epochs", "2"]
    return main([*args, "--no-progress", "--out", str(out), *extra])


def weights(directory, m: int) -> dict[str, torch.Tensor]:
    return load_file(str(member_path(directory, m)))


def test_init_starts_from_the_encoder_with_a_fresh_head(lipo60, tmp_path) -> None:
    """With lr 0 the trained weights are the starting weights: encoder + readout are the init
    artifact's, the head is new (which artifact member starts which member: see
    tests/unit/training/test_warm_start.py)."""
    init = resolve_model("solubility")
    out = tmp_path / "start"
    assert train(lipo60, out, "--init", "solubility", "--lr", "0") == 0
    config, pre = load_config(out), load_config(init)
    assert config.model == pre.model  # architecture from the artifact (1 task each)
    assert config.featurizer == pre.featurizer
    assert config.task.target_names == ("lipo",)
    assert config.provenance.finetuned_from == str(init) and config.provenance.fresh_head
    got, src = weights(out, 0), weights(init, 0)
    assert set(got) == set(src)
    loaded = [k for k in got if k.startswith(LOADED)]
    assert len(loaded) > 20
    for key in loaded:
        torch.testing.assert_close(got[key], src[key], atol=1e-6, rtol=0)
    heads = [k for k in got if k.startswith("head.") and got[k].ndim == 2]
    assert heads and all(not torch.allclose(got[k], src[k]) for k in heads)


def test_init_then_trains_every_weight(lipo60, tmp_path) -> None:
    init = resolve_model("solubility")
    out = tmp_path / "trained"
    assert train(lipo60, out, "--init", "solubility") == 0
    got, src = weights(out, 0), weights(init, 0)
    moved = [k for k in got if k.startswith(LOADED) and not torch.equal(got[k], src[k])]
    assert len(moved) > 10  # the encoder trains (full fine-tuning), from the artifact's weights
    metrics = json.loads((out / "metrics.json").read_text())
    assert np.isfinite(metrics["test"]["ensemble"]["rmse"])


def parse(*extra: str):
    base = ["train", "--data", "x.csv", "--target-columns", "y", "--out", "o"]
    return build_parser().parse_args([*base, *extra])


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--hidden-dim", "128"], "--hidden-dim"),
        (["--layers", "MSP"], "--layers"),
        (["--post-ln"], "--post-ln"),
        (["--model", "nsa"], "--model"),
        (["--preset", "wide"], "--preset wide"),
        (["--featurizer", "3d"], "--featurizer"),
    ],
)
def test_conflicting_flags_are_errors_naming_the_flag(flags, named) -> None:
    with pytest.raises(ConfigError, match=named) as err:
        init_settings(parse("--init", "solubility", *flags))
    assert "--init solubility" in str(err.value)


def test_conflicting_flag_from_the_command_line(lipo60, tmp_path, capsys) -> None:
    assert train(lipo60, tmp_path / "x", "--init", "solubility", "--hidden-dim", "128") == 2
    err = capsys.readouterr().err
    assert "--hidden-dim" in err and "conflicts with --init solubility" in err
    assert not (tmp_path / "x" / "config.json").exists()


def test_agreeing_flags_and_init_none() -> None:
    pre = load_config(resolve_model("solubility")).model
    init, model, _ = init_settings(
        parse("--init", "solubility", "--hidden-dim", str(pre.hidden_dim))
    )
    assert init == resolve_model("solubility") and model == {"hidden_dim": pre.hidden_dim}
    init, model, featurizer = init_settings(parse("--init", "none", "--hidden-dim", "96"))
    assert init is None and model["hidden_dim"] == 96 and featurizer.kind == "2d"


def test_auto_starts_a_2d_task_from_the_foundation(capsys) -> None:
    """No --init (= auto) on a 2D molecular task: the foundation model, said on stderr; the
    same with flags that agree with it."""
    foundation = resolve_model("foundation")
    hidden = load_config(foundation).model.hidden_dim
    for extra in ((), ("--init", "auto"), ("--hidden-dim", str(hidden), "--featurizer", "2d")):
        init, _, _ = init_settings(parse(*extra))
        assert init == foundation, extra
        assert "starting from the foundation model (a 2D molecular task; --init none)" in (
            capsys.readouterr().err
        )


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--featurizer", "3d"], "the 3d featuriser is not the foundation's"),
        (["--per-atom"], "--per-atom"),
        (["--hidden-dim", "128"], "--hidden-dim (hidden_dim=128) conflicts with --init foundation"),
        (["--preset", "wide"], "--preset wide"),
        (["--cutoff", "4.0"], "--cutoff"),
    ],
)
def test_auto_is_a_random_start_where_the_foundation_does_not_fit(flags, reason, capsys) -> None:
    init, model, featurizer = init_settings(parse(*flags))
    assert init is None
    err = capsys.readouterr().err
    assert "molprop train: a random start (" in err and reason in err, err
    if "--hidden-dim" in flags:
        assert model["hidden_dim"] == 128  # the flags a random start is built with
    if "--featurizer" in flags:
        assert featurizer.kind == "3d"


def test_auto_without_a_foundation_model_is_a_random_start(tmp_path, monkeypatch, capsys):
    import molprop.artifact.resolve as resolve

    monkeypatch.setattr(resolve, "shipped_models_dir", lambda: tmp_path)
    monkeypatch.delenv("MOLPROP_MODEL_DIR", raising=False)
    assert init_settings(parse())[0] is None
    assert "no model named 'foundation' is installed" in capsys.readouterr().err
    with pytest.raises(ArtifactError, match="foundation"):  # named explicitly: an error
        init_settings(parse("--init", "foundation"))


def test_train_without_init_starts_from_the_foundation(lipo60, tmp_path) -> None:
    """The whole command with no --init: encoder + readout are the foundation's (lr 0), the
    provenance says so; --init none gives a random start with no provenance."""
    foundation = resolve_model("foundation")
    out = tmp_path / "auto"
    assert train(lipo60, out, "--lr", "0") == 0
    config = load_config(out)
    assert config.provenance.finetuned_from == str(foundation)
    got, src = weights(out, 0), weights(foundation, 0)
    for key in (k for k in got if k.startswith(LOADED)):
        torch.testing.assert_close(got[key], src[key], atol=1e-6, rtol=0)
    scratch = tmp_path / "none"
    assert train(lipo60, scratch, "--lr", "0", "--init", "none") == 0
    assert load_config(scratch).provenance.finetuned_from == ""
    random = weights(scratch, 0)
    encoder = [k for k in src if k.startswith("encoder.") and src[k].ndim == 2]
    assert encoder and not any(torch.equal(random[k], src[k]) for k in encoder)


def test_init_with_a_missing_model_says_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(tmp_path))
    with pytest.raises(ArtifactError, match="no model named 'not_there'"):
        init_settings(parse("--init", "not_there"))


def test_a_fine_tuned_model_can_be_calibrated_by_cross_validation(lipo60, tmp_path, monkeypatch):
    """``--calibration cv`` with a start model (the default ``--init auto`` picks the
    foundation model for such a task) once trained the model and then refused to calibrate it:
    each fold is now fine-tuned from the same start (its encoder, a fresh head) and the
    calibration is fitted out of fold."""
    import molprop.training.cv_calibrate as cv_module

    starts: list[str] = []
    real = cv_module.InitSource.member

    def member(source, config, m, seed):
        starts.append(source.directory.name)
        return real(source, config, m, seed)

    monkeypatch.setattr(cv_module.InitSource, "member", member)
    out = tmp_path / "cv"
    extra = ["--init", "solubility", "--calibration", "cv", "--cv-folds", "2"]
    assert train(lipo60, out, *extra, "--ensemble-size", "1") == 0
    # the model's one member, then one per fold, each from the same start
    assert starts == ["solubility"] * 3
    calibration = json.loads((out / "calibration.json").read_text())
    assert calibration["fitted_on"].startswith("2-fold scaffold cross-validation of train+val")
    assert load_config(out).provenance.finetuned_from == str(resolve_model("solubility"))
