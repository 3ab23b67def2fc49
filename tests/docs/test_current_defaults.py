"""docs/results/core.md "Current defaults" says what ``molprop train`` trains with no flags:
every value there is read from ``PRESETS["default"]``, ``ModelConfig`` and ``TrainConfig``; and
what ``molprop finetune`` does differently, read from its parser."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from molprop.cli.main import build_parser
from molprop.models.config import PRESETS, ModelConfig, TrainConfig

PAGE = Path(__file__).resolve().parents[2] / "docs" / "results" / "core.md"


def _defaults(cls: type) -> dict[str, Any]:
    return {
        f.name: f.default for f in fields(cls) if f.name not in ("node_dim", "edge_dim", "n_tasks")
    }


def _lr(x: float) -> str:
    return re.sub(r"e-0*", "e-", f"{x:.0e}")  # 5e-4


def phrases(model: dict[str, Any], train: dict[str, Any]) -> list[str]:
    """What the section must say for these settings."""
    out = [
        f"layers `{model['layers']}`",
        f"hidden {model['hidden_dim']}",
        f"{model['heads']} heads",
        f"{model['num_seeds']} PMA seeds",
        f"{model['token_scheme']} bond tokens",
        f"dropout {model['dropout']:g}",
        f"MLP of {model['mlp_mult']}× width",
        f"{model['head_hidden']}-wide head",
        f"lr {_lr(train['lr'])}",
        f"weight decay {train['weight_decay']:g}",
        f"batch {train['batch_size']}",
        f"≤ {train['epochs']} epochs",
        f"early stopping patience {train['patience']}",
        f"(patience {train['lr_patience']})",
        f"gradient clipping {train['grad_clip']:g}",
        f"`--ema-epochs {train['ema_epochs']:g}`",
        f"{train['ensemble_size']} member",
    ]
    out.append("pre-LN blocks" if model["pre_ln"] else "post-LN blocks")
    out.append(f"a {model['mlp_kind']} MLP")
    out.append("log and linear counts" if model["size_linear"] else "log counts")
    out.append("on the weight matrices only" if train["weight_decay_on"] == "matrices" else "")
    out.append("LR halving on plateau" if train["schedule"] == "plateau" else train["schedule"])
    return [p for p in out if p]


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split("## Current defaults", 1)[1].split("\n## ", 1)[0]


def missing(text: str, model: dict[str, Any], train: dict[str, Any]) -> list[str]:
    return [p for p in phrases(model, train) if p not in " ".join(text.split())]


def current() -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        {**_defaults(ModelConfig), **PRESETS["default"]["model"]},
        {**_defaults(TrainConfig), **PRESETS["default"]["train"]},
    )


def test_the_current_defaults_section_matches_the_code() -> None:
    model, train = current()
    assert missing(section(), model, train) == []
    assert PRESETS["default"] == PRESETS["small"]  # the page calls it `--preset small`
    assert "`--preset small`" in section()


def test_the_check_sees_a_changed_default() -> None:
    model, train = current()
    wider = {**model, "hidden_dim": model["hidden_dim"] * 2}
    assert missing(section(), wider, {**train, "lr": 1e-4}) == [
        f"hidden {model['hidden_dim'] * 2}",
        "lr 1e-4",
    ]


def test_the_section_names_the_start_and_the_foundation_has_the_default_architecture() -> None:
    """The page says a 2D task starts from the foundation model (``--init``'s default, read from
    the parser) with "the same architecture": the shipped foundation's model settings are the
    default preset's."""
    from molprop.artifact.resolve import resolve_model
    from molprop.artifact.store import load_config
    from molprop.cli.main import build_parser

    args = build_parser().parse_args(
        ["train", "--data", "x", "--target-columns", "y", "--out", "o"]
    )
    text = " ".join(section().split())
    assert f"`--init {args.init}`" in text and "`--init none`" in text
    foundation = load_config(resolve_model("foundation")).model
    model, _ = current()
    differ = {
        k: (v, getattr(foundation, k))
        for k, v in model.items()
        if k != "n_extra" and getattr(foundation, k) != v
    }
    assert differ == {}


def finetune_defaults() -> dict[str, Any]:
    """What ``molprop finetune`` trains with when no training flag is given."""
    args = build_parser().parse_args(
        ["finetune", "--data", "x.csv", "--target-columns", "y", "--out", "o"]
    )
    return {"epochs": args.epochs, "schedule": args.schedule, "warmup": args.warmup_epochs}


def finetune_phrases(ft: dict[str, Any]) -> list[str]:
    return [
        f"≤ {ft['epochs']} epochs",
        f"`--schedule {ft['schedule']} --warmup-epochs {ft['warmup']}`",
    ]


def finetune_paragraph() -> str:
    paragraphs = [p for p in section().split("\n\n") if p.startswith("`molprop finetune`")]
    assert len(paragraphs) == 1
    return " ".join(paragraphs[0].split())


def test_the_finetune_defaults_paragraph_matches_the_parser() -> None:
    ft = finetune_defaults()
    assert [p for p in finetune_phrases(ft) if p not in finetune_paragraph()] == []
    changed = {**ft, "epochs": ft["epochs"] + 1}  # the check sees a changed default
    assert [p for p in finetune_phrases(changed) if p not in finetune_paragraph()] == [
        f"≤ {ft['epochs'] + 1} epochs"
    ]
