"""``molprop finetune``'s own training defaults (``molprop.cli.finetune.DEFAULTS``): used and
shown in --help when no flag is given, overridden by flags, and not ``molprop train``'s."""

from __future__ import annotations

from molprop.cli.finetune import DEFAULTS
from molprop.cli.main import build_parser
from molprop.cli.options import train_config
from molprop.models.config import PRESETS, TrainConfig, finetune_train_config

DATA = ["--data", "x.csv", "--target-columns", "y", "--out", "o"]


def _train_config(command: str, *extra: str) -> TrainConfig:
    return train_config(build_parser().parse_args([command, *DATA, *extra]))


def test_finetune_trains_with_its_own_defaults():
    cfg = _train_config("finetune")
    assert (cfg.epochs, cfg.schedule, cfg.warmup_epochs) == (30, "warmup_decay", 2)
    assert {k: getattr(cfg, k) for k in DEFAULTS} == DEFAULTS
    # the rest as molprop train: the default preset's lr and batch, TrainConfig's patience
    assert (cfg.lr, cfg.batch_size) == (
        PRESETS["default"]["train"]["lr"],
        PRESETS["default"]["train"]["batch_size"],
    )
    assert cfg.patience == TrainConfig.patience and cfg.lr_floor == TrainConfig.lr_floor
    # every setting: the one home of a fine-tune's defaults, which the Python API's
    # FinetuneRequest and the service's fine-tune jobs use too
    assert cfg == finetune_train_config()


def test_train_keeps_its_defaults():
    cfg = _train_config("train")
    assert (cfg.epochs, cfg.schedule, cfg.warmup_epochs) == (
        TrainConfig.epochs,
        PRESETS["default"]["train"].get("schedule", TrainConfig.schedule),
        PRESETS["default"]["train"].get("warmup_epochs", TrainConfig.warmup_epochs),
    )
    assert cfg.schedule != DEFAULTS["schedule"] and cfg.epochs != DEFAULTS["epochs"]


def test_flags_override_the_finetune_defaults():
    cfg = _train_config("finetune", "--schedule", "plateau", "--epochs", "120")
    assert (cfg.schedule, cfg.epochs) == ("plateau", 120)
    assert _train_config("finetune", "--warmup-epochs", "0").warmup_epochs == 0


def test_finetune_help_shows_its_defaults():
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    text = " ".join(sub["finetune"].format_help().split())
    assert "--epochs EPOCHS default 30" in text
    assert "LR schedule (default warmup_decay)" in text
    assert "warm-up of --schedule warmup_decay (default 2)" in text
    train = " ".join(sub["train"].format_help().split())
    assert "LR schedule (default plateau)" in train and "--epochs EPOCHS default" not in train
