"""``--preset``: named starting points whose values explicit flags override."""

from __future__ import annotations

from dataclasses import fields

import pytest

from molprop.cli.main import build_parser
from molprop.cli.options import model_overrides, train_config
from molprop.models.config import DEFAULT_PAIR_RBF_3D, PRESETS, ModelConfig, TrainConfig

BASE = ["train", "--data", "x.csv", "--target-columns", "y", "--out", "o"]


def _resolve(*extra: str) -> tuple[dict, TrainConfig]:
    args = build_parser().parse_args(BASE + list(extra))
    return model_overrides(args), train_config(args)


def test_no_preset_gives_the_default_preset():
    """No ``--preset``: the ``default`` preset's values (the ``molprop hpopt`` search result), the dataclass
    defaults for what it leaves out."""
    model, train = _resolve()
    defaults = {f.name: f.default for f in fields(ModelConfig)}
    preset = PRESETS["default"]
    for key in ("layers", "hidden_dim", "heads", "num_seeds", "dropout", "token_scheme"):
        assert model[key] == preset["model"].get(key, defaults[key]), key
    for key in ("batch_size", "lr", "schedule", "warmup_epochs"):
        assert getattr(train, key) == preset["train"].get(key, getattr(TrainConfig, key)), key


def test_wide_preset_is_the_old_default():
    """``--preset wide`` reproduces the former default (the dataclass defaults, which
    old artifacts and the grid's earlier runs were made with)."""
    model, train = _resolve("--preset", "wide")
    defaults = {f.name: f.default for f in fields(ModelConfig)}
    for key in ("layers", "hidden_dim", "heads", "num_seeds", "dropout", "token_scheme"):
        assert model[key] == defaults[key], key
    for key in ("batch_size", "lr", "schedule"):
        assert getattr(train, key) == getattr(TrainConfig, key), key


def test_small_preset_sets_its_values():
    model, train = _resolve("--preset", "small")
    small = PRESETS["small"]
    assert {k: model[k] for k in small["model"]} == small["model"]
    assert (train.batch_size, train.lr) == (small["train"]["batch_size"], small["train"]["lr"])
    assert model["hidden_dim"] != ModelConfig.__dataclass_fields__["hidden_dim"].default


def test_explicit_flags_override_the_preset():
    model, train = _resolve(
        "--preset", "small", "--hidden-dim", "96", "--lr", "2e-4", "--dropout", "0.2"
    )
    assert model["hidden_dim"] == 96 and model["dropout"] == 0.2 and train.lr == 2e-4
    assert model["heads"] == PRESETS["small"]["model"]["heads"]  # the rest still from the preset
    assert train.batch_size == PRESETS["small"]["train"]["batch_size"]


def test_pair_gaussians_default_on_for_3d_only():
    """``--pair-rbf`` unset: 16 element-pair Gaussians with ``--featurizer 3d``, none
    for 2D (no distances); an explicit value wins either way."""
    assert _resolve()[0]["pair_rbf"] == 0
    assert _resolve("--featurizer", "3d")[0]["pair_rbf"] == DEFAULT_PAIR_RBF_3D == 16
    assert _resolve("--featurizer", "3d", "--pair-rbf", "0")[0]["pair_rbf"] == 0
    assert _resolve("--pair-rbf", "8")[0]["pair_rbf"] == 8


def test_unknown_preset_is_rejected():
    with pytest.raises(SystemExit):
        build_parser().parse_args(BASE + ["--preset", "huge"])


def test_ema_epochs_flag_reaches_train_and_transfer_configs():
    from molprop.cli.transfer_benchmark import train_configs

    assert _resolve()[1].ema_epochs == TrainConfig.ema_epochs
    assert _resolve("--ema-epochs", "0")[1].ema_epochs == 0.0
    parser = build_parser()
    base = [
        "transfer-benchmark",
        "--data",
        "x.csv",
        "--low-column",
        "a",
        "--high-column",
        "b",
        "--high-sizes",
        "10",
        "5",
        "5",
        "--out",
        "o",
    ]
    pre, fine = train_configs(parser.parse_args(base))
    assert pre.ema_epochs == fine.ema_epochs == TrainConfig.ema_epochs
    pre, fine = train_configs(parser.parse_args(base + ["--ema-epochs", "0", "--dropout", "0.1"]))
    assert pre.ema_epochs == fine.ema_epochs == 0.0
    assert (pre.epochs, fine.epochs) == (40, 40)


def test_preset_file_sets_its_values_and_flags_still_win(tmp_path):
    path = tmp_path / "best.json"
    path.write_text(
        '{"model": {"hidden_dim": 48, "heads": 6, "layers": "MSP S"}, '
        '"train": {"lr": 7e-4, "schedule": "warmup_decay", "warmup_epochs": 3}}'
    )
    model, train = _resolve("--preset", str(path))
    assert (model["hidden_dim"], model["heads"], model["layers"]) == (48, 6, "MSP S")
    assert (train.lr, train.schedule, train.warmup_epochs) == (7e-4, "warmup_decay", 3)
    assert train.batch_size == TrainConfig.batch_size  # not in the file: the default
    model, train = _resolve("--preset", str(path), "--heads", "4", "--schedule", "plateau")
    assert model["heads"] == 4 and train.schedule == "plateau" and model["hidden_dim"] == 48


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"model": {"width": 3}}', "width"),
        ('{"optimizer": {}}', "optimizer"),
        ("[1, 2]", "JSON object"),
        ("{not json", "not JSON"),
    ],
)
def test_bad_preset_files_are_rejected_naming_the_problem(tmp_path, capsys, text, message):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(SystemExit):
        build_parser().parse_args(BASE + ["--preset", str(path)])
    assert message in capsys.readouterr().err


def test_token_scheme_of_the_preset_applies_to_esa_on_2d_graphs_only(tmp_path):
    """A preset's undirected tokens reach ESA on 2D graphs; NSA (no edge tokens) and 3D inputs
    (periodic graphs have no one-token-per-bond form) stay directed unless asked."""
    preset = tmp_path / "p.json"
    preset.write_text('{"model": {"token_scheme": "undirected"}}')
    assert _resolve("--preset", str(preset))[0]["token_scheme"] == "undirected"
    assert _resolve("--preset", str(preset), "--model", "nsa")[0]["token_scheme"] == "directed"
    assert _resolve("--preset", str(preset), "--featurizer", "3d")[0]["token_scheme"] == "directed"
    explicit = _resolve("--featurizer", "3d", "--token-scheme", "undirected")[0]
    assert explicit["token_scheme"] == "undirected"
    assert _resolve("--preset", "wide")[0]["token_scheme"] == "directed"
