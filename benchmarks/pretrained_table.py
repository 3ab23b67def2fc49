"""The shipped models, replaced -> now: ``docs/results/pretrained.md`` from their artifacts.

Every number is read from ``pretrained/<name>/metrics.json`` and ``config.json`` (nothing typed
by hand): the ensemble test metrics of the model a ``make pretrained`` retrain replaced
(``metrics.json["previous"]``, same split, same test molecules) against the current ones, the
settings that changed, the members' test metrics, training time, and the test coverage of the
90 % intervals (regression: overall and per applicability-domain bin) or ECE / Brier
(classification).

Usage: ``python -m benchmarks.pretrained_table`` (seconds; no training).
"""

from __future__ import annotations

import json
from pathlib import Path

from molprop.artifact.store import load_config
from molprop.pretrained_recipes import PRETRAINED, RECIPES, changed_settings

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "pretrained.md"
HEADLINE = {"regression": ("rmse", "mae", "r2"), "classification": ("roc_auc", "mcc", "accuracy")}


def _metrics(test: dict, keys: tuple[str, ...]) -> str:
    return ", ".join(f"{k} {test[k]:.3f}" for k in keys if isinstance(test.get(k), float))


def _changed(previous: dict, directory: Path) -> str:
    config = load_config(directory)
    diffs = changed_settings(previous, config.model, config.train)
    return "; ".join(f"{k} {old} → {now}" for k, old, now in diffs) or "–"


def _before(previous: dict | None, keys: tuple[str, ...]) -> str:
    """The replaced model's test metrics; for one trained on other data (its test molecules
    were others), both models on the molecules neither trained on."""
    if not previous:
        return "(not retrained)"
    held = previous.get("held_out")
    if not held:
        return _metrics(previous["test"], keys)
    common = held["common"]
    return (
        f"trained on `{held['replaced_data']}`; on {common['n']} test molecules neither trained "
        f"on: {_metrics(common['replaced'], keys)} (this model: "
        f"{_metrics(common['this_model'], keys)})"
    )


def _changes(previous: dict | None, directory: Path) -> str:
    """The settings that changed; for a replaced model trained on other data, the data and
    the starting model first."""
    if not previous:
        return "–"
    changes = [_changed(previous, directory)]
    config = load_config(directory)
    start = config.provenance.finetuned_from
    if previous.get("held_out"):
        changes.insert(
            0,
            f"data `{previous['held_out']['replaced_data']}` → `{config.provenance.data}`"
            + (f"; started from `{start}`" if start else ""),
        )
    elif "init" in previous and previous["init"] != start:
        was = f"`{previous['init']}`" if previous["init"] else "random"
        now = f"`{start}`" if start else "random"
        changes.insert(0, f"start: {was} → {now}")
    return "; ".join(c for c in changes if c != "–") or "–"


def _validation(previous: dict | None, metrics: dict, keys: tuple[str, ...]) -> str:
    """The replaced model's ensemble validation metrics -> this model's (same split), where
    the retrain recorded them (what a replacement is decided on)."""
    old, now = (previous or {}).get("val"), metrics.get("val", {}).get("ensemble")
    if not old or not now:
        return "–"
    return f"{_metrics(old, keys)} → **{_metrics(now, keys)}**"


def _trust(metrics: dict, task_type: str) -> str:
    test = metrics.get("calibration", {}).get("test", {})
    if not test:
        return "not calibrated"
    (target, entry), *_ = test.items()
    if task_type == "classification":
        return (
            f"ECE {entry['ece']:.3f} (uncalibrated {entry['ece_uncalibrated']:.3f}), Brier "
            f"{entry['brier']:.3f} ({entry['brier_uncalibrated']:.3f})"
        )
    r = entry["levels"]["0.9"]
    bins = ", ".join(
        f"{b.replace('_', ' ')} {v['coverage']:.1%} (n {v['n']})" for b, v in r["bins"].items()
    )
    return f"{r['coverage']:.1%} (n {r['n']}); {bins}"


def rows() -> list[dict]:
    out = []
    for name, recipe in RECIPES.items():
        directory = PRETRAINED / name
        metrics = json.loads((directory / "metrics.json").read_text())
        keys = HEADLINE[recipe.task_type]
        previous = metrics.get("previous")
        members = metrics["training"]["members"]
        out.append(
            {
                "name": name,
                "now": _metrics(metrics["test"]["ensemble"], keys),
                "before": _before(previous, keys),
                "changed": _changes(previous, directory),
                "validation": _validation(previous, metrics, keys),
                "members": ", ".join(
                    f"{m[keys[0]]:.3f}" for m in metrics["test"].get("members", [])
                ),
                "epochs": ", ".join(f"{m['best_epoch']}/{m['epochs_run']}" for m in members),
                "seconds": metrics["training"]["wall_seconds"],
                "trust": _trust(metrics, recipe.task_type),
            }
        )
    return out


def markdown(table: list[dict]) -> str:
    lines = [
        "# The shipped models: replaced → now",
        "",
        "Written by `python -m benchmarks.pretrained_table` from `pretrained/<name>/metrics.json` "
        "and `config.json`. The five 2D models were retrained with `make "
        "pretrained` on `molprop train`'s default recipe (the default preset: hidden 64, 4 "
        "heads, `MSMSP S`, 8 seeds, no dropout, batch 64, lr 5e-4; weight averaging over 1 "
        "epoch, decay on weight matrices only, patience 30; 3 members, seeds 0-2, the same "
        "scaffold split and epochs as before). `homo_lumo_gap_3d` already had that recipe and "
        "was not retrained (its input comparison with the 2D model was rerun). Before = the "
        'model the retrain replaced (`metrics.json["previous"]`), on the same test molecules. '
        "Training: 1 torch thread per process, two processes sharing the 2-core machine. "
        "`solubility` was then replaced by a model fine-tuned from the foundation model on "
        "AqSolDB (`data/admet`, the scaffold split `admet_regression` gives those molecules, "
        "ESOL's scaffold test molecules kept out of training); the model it replaced was trained "
        "on ESOL, so both are compared on this model's test molecules that neither trained on "
        '(`metrics.json["previous"]["held_out"]`; trained with the default torch threads on the '
        "shared machine). `hydration_free_energy` and `lipophilicity` were then retrained from "
        "the foundation model (`--init foundation`, the same split, epochs chosen on "
        "validation: `molprop/pretrained_recipes.py`; 2 torch threads on the shared machine): "
        "a retrain from another start replaces the shipped model only when its ensemble "
        "validation metric is better (RMSE; ROC-AUC for a classifier), the validation column. "
        "`bbb_penetration`'s foundation start lost on validation and was not shipped (its "
        "numbers: the recipe's comment and docs/models.md).",
        "",
        "| model | test, ensemble: replaced | test, ensemble: now | validation, ensemble: "
        "replaced → now | settings changed | members now (headline) | best epoch / run | "
        "train wall s | 90 % interval coverage (test) or probability calibration |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| `{r['name']}` | {r['before']} | **{r['now']}** | {r['validation']} | "
            f"{r['changed']} | {r['members']} | {r['epochs']} | {r['seconds']:.0f} | "
            f"{r['trust']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    OUT.write_text(markdown(rows()))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
