"""Reports of a hyperparameter study: the best preset (JSON for ``molprop train --preset``),
every trial as CSV and a markdown table, and a PNG plot of the trials.

Files in ``out`` (each written to a temporary name and renamed, so a worker finishing while
another writes never leaves a half file)::

    best_preset.json   {"model": {...}, "train": {...}} of the best complete trial
    trials.csv         one row per trial: number, state, value, params, epochs, seconds, worker
    trials.md          the same, complete trials sorted best first
    trials.png         validation loss per trial (pruned: last reported epoch), best so far
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, cast

import optuna
import pandas as pd

from molprop.errors import ConfigError

log = logging.getLogger(__name__)

BEST_PRESET = "best_preset.json"


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def trials_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial (pruned trials: ``value`` is their last reported validation loss)."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        value = t.value
        if value is None and t.intermediate_values:
            value = t.intermediate_values[max(t.intermediate_values)]
        rows.append(
            {
                "trial": t.number,
                "state": t.state.name,
                "val_loss": value,
                **{f"param_{k}": v for k, v in sorted(t.params.items())},
                "epochs_reported": len(t.intermediate_values),
                "seconds": t.user_attrs.get("seconds"),
                # CPU time of the worker's process (all its threads) per reported epoch: the
                # cost column, robust to other load on the machine
                "cpu_s_per_epoch": (
                    round(t.user_attrs["cpu_seconds"] / len(t.intermediate_values), 2)
                    if t.user_attrs.get("cpu_seconds") is not None and t.intermediate_values
                    else None
                ),
                "worker": t.user_attrs.get("worker"),
            }
        )
    frame = pd.DataFrame(rows)
    params = sorted(c for c in frame.columns if c.startswith("param_"))
    rest = [c for c in frame.columns if not c.startswith("param_") and c != "worker"]
    return frame[rest[:3] + params + rest[3:] + ["worker"]] if len(frame) else frame


def best_preset(study: optuna.Study) -> dict[str, Any]:
    """The preset (``{"model": ..., "train": ...}``) of the best complete trial, as the
    objective stored it on the trial."""
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not complete:
        raise ConfigError(f"study {study.study_name!r} has no complete trial yet")
    return study.best_trial.user_attrs["preset"]


def markdown(frame: pd.DataFrame) -> str:
    """A plain markdown table of ``frame`` (floats with 4 significant digits)."""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return ""
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines) + "\n"


def plot_trials(frame: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    done = frame[frame["state"] == "COMPLETE"]
    pruned = frame[frame["state"] == "PRUNED"]
    ax.scatter(done["trial"], done["val_loss"], label="complete", color="tab:blue", zorder=3)
    if len(pruned):
        ax.scatter(
            pruned["trial"],
            pruned["val_loss"],
            label="pruned (last epoch reported)",
            color="tab:gray",
            marker="x",
            zorder=3,
        )
    if len(done):
        best = done.sort_values("trial")["val_loss"].cummin()
        ax.step(
            done.sort_values("trial")["trial"],
            best,
            where="post",
            color="tab:red",
            label="best so far",
        )
    ax.set_xlabel("trial")
    ax.set_ylabel("validation loss (scaled MSE / BCE)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    _atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=120))
    plt.close(fig)


def write_reports(study: optuna.Study, out: Path) -> dict[str, Path]:
    """Write the files of the module docstring; without a complete trial only the trial
    tables and plot (and a log line)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frame = trials_frame(study)
    paths = {"csv": out / "trials.csv", "md": out / "trials.md", "png": out / "trials.png"}
    _atomic_write(paths["csv"], lambda p: frame.to_csv(p, index=False))
    order = frame.assign(_rank=frame["state"].map(_rank)) if len(frame) else frame
    if len(frame):
        order = order.sort_values(["_rank", "val_loss"]).drop(columns="_rank")
    counts: dict[str, int] = {}
    if len(frame):  # the trial states' names
        counts = cast(dict[str, int], frame["state"].value_counts().to_dict())
    summary = ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
    text = f"# Study `{study.study_name}`: {len(frame)} trials ({summary})\n\n" + (
        markdown(order) if len(frame) else "(no trials)\n"
    )
    _atomic_write(paths["md"], lambda p: p.write_text(text))
    plot_trials(frame, paths["png"], f"{study.study_name}: {len(frame)} trials")
    try:
        preset = best_preset(study)
    except ConfigError as exc:
        log.warning("%s: no %s written", exc, BEST_PRESET)
        return paths
    paths["preset"] = out / BEST_PRESET
    _atomic_write(paths["preset"], lambda p: p.write_text(json.dumps(preset, indent=2)))
    log.info(
        "best trial %d (val_loss %.4f): %s",
        study.best_trial.number,
        study.best_value,
        paths["preset"],
    )
    return paths


def _rank(state: str) -> int:
    return {"COMPLETE": 0, "PRUNED": 1}.get(state, 2)
