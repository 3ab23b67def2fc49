"""``molprop transfer-benchmark``: high-fidelity-only vs. each fine-tuning strategy in both
modes, plus a linear correction of the measured low label (fitted on the high-fidelity training
set: the honest transductive bar) and, inductive, a linear map of the pretrained model's
prediction (the inductive bar, fitted on the training split's out-of-fold predictions when
cross-fitting, ``linear-map``, and on its in-sample predictions, ``linear-map-insample``), over
several seeds. Inductive ``label-augment`` / ``delta`` / ``delta-measured`` train on
out-of-fold predictions (``crossfit_folds`` K fold models per seed, shared by these strategies;
0: in-sample); ``delta-measured`` (inductive only) is skipped in transductive mode.

Per seed: one fidelity split per mode (the high-fidelity partition is shared), one pretrained
model per mode (shared by every strategy of the seed; ``reuse_pretrained``: also reused from an
earlier run into the same ``out`` when its recipe, molecules and seed match), one fine-tune per
strategy, one high-only model. Writes ``results.csv`` (one row
per run), ``results.md`` (test RMSE / MAE, mean ± sd over seeds) and ``results.png``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from molprop.featurize import build_featurizer
from molprop.io.table import read_table
from molprop.models.config import TrainConfig
from molprop.training.metrics import regression_metrics
from molprop.training.train import TrainRequest, TrainResult, run_train
from molprop.transfer import MODES, STRATEGIES, Mode, StrategyName
from molprop.transfer.crossfit import CrossFit, out_of_fold_predictions
from molprop.transfer.fidelity_split import build_fidelity_split
from molprop.transfer.finetune import FinetuneRequest, run_finetune
from molprop.transfer.pretrain import pretrain_or_reuse, run_pretrain
from molprop.transfer.strategies import get_strategy

log = logging.getLogger(__name__)


@dataclass
class BenchmarkRequest:
    """Data, columns, sizes, seeds and budgets of one benchmark."""

    data: str | Path | pd.DataFrame
    low_column: str
    high_column: str
    high_sizes: tuple[float, float, float]
    out: str | Path
    smiles_column: str = "smiles"
    seeds: Sequence[int] = (0, 1, 2)
    strategies: Sequence[StrategyName] = STRATEGIES
    modes: Sequence[Mode] = MODES
    model: dict[str, Any] = field(default_factory=dict)
    pretrain: TrainConfig = field(default_factory=TrainConfig)
    finetune: TrainConfig = field(default_factory=TrainConfig)
    pretrain_holdout: float = 0.1
    units: str = ""
    progress: bool = False
    crossfit_folds: int = 3
    keep_head: bool = False
    unfreeze_after: int = 0
    reuse_pretrained: bool = False


def linear_correction(split_dir: Path, low: str, high: str) -> dict[str, float]:
    """high ≈ a·low + b fitted on train.csv, applied to the measured low labels of test.csv."""
    train = pd.read_csv(split_dir / "train.csv")
    test = pd.read_csv(split_dir / "test.csv")
    a, b = np.polyfit(train[low].to_numpy(float), train[high].to_numpy(float), 1)
    pred = a * test[low].to_numpy(float) + b
    return {**regression_metrics(test[high].to_numpy(float), pred), "slope": a, "intercept": b}


def linear_map_of_prediction(
    pre_dir: Path, split_dir: Path, high: str, train_pred: np.ndarray | None = None
) -> dict[str, float]:
    """high ≈ a·pred + b with ``pred`` the pretrained model's prediction: fitted on train.csv
    (``train_pred``, e.g. out-of-fold, or the full model's in-sample predictions), applied to
    the full model's predictions of test.csv (the inductive bar: no measured low label)."""
    from molprop.inference.augment import PretrainedSource

    source = PretrainedSource(pre_dir)
    featurizer = build_featurizer(source.config.featurizer)

    def predict(frame: pd.DataFrame) -> np.ndarray:
        return source.low_predictions([featurizer.from_smiles(s) for s in frame["smiles"]])[:, 0]

    train = pd.read_csv(split_dir / "train.csv")
    test = pd.read_csv(split_dir / "test.csv")
    x = predict(train) if train_pred is None else np.asarray(train_pred)[:, 0]
    a, b = np.polyfit(x, train[high].to_numpy(float), 1)
    pred = a * predict(test) + b
    return {**regression_metrics(test[high].to_numpy(float), pred), "slope": a, "intercept": b}


def crossfit_predictions(
    crossfit: CrossFit, pre_dir: Path, split_dir: Path, seed: int
) -> tuple[np.ndarray, dict]:
    """Out-of-fold predictions of train.csv's molecules from ``crossfit``'s fold models
    (trained on first use, then reused: by each strategy of the seed, which fine-tune with the
    same seed) and the cross-fitting report."""
    from molprop.artifact import Artifact

    pre = Artifact(pre_dir).read_config()
    train = pd.read_csv(split_dir / "train.csv")
    featurizer = build_featurizer(pre.featurizer)
    graphs = [featurizer.from_smiles(s) for s in train["smiles"]]
    return out_of_fold_predictions(crossfit, pre, train["smiles"].tolist(), graphs, seed)


def _record(
    method: str, mode: str, seed: int, test: dict, seconds: float, val_rmse: float = np.nan
) -> dict:
    """One results.csv row; ``val_rmse`` (validation RMSE, for choosing recipes without the
    test set) is NaN for the linear bars, which have no validation step."""
    return {
        "method": method,
        "mode": mode,
        "seed": seed,
        "rmse": test["rmse"],
        "mae": test["mae"],
        "n_test": test.get("n", np.nan),
        "val_rmse": val_rmse,
        "seconds": round(seconds, 1),
    }


def _test_metrics(result: TrainResult, high: str, part: str = "test") -> dict:
    ens = result.ensemble(part)
    return {
        "rmse": ens.get(f"rmse/{high}", ens.get("rmse", np.nan)),
        "mae": ens.get(f"mae/{high}", ens.get("mae", np.nan)),
        "n": ens.get("n", np.nan),
    }


def _val_rmse(result: TrainResult, high: str) -> float:
    return float(_test_metrics(result, high, "val")["rmse"])


def run_seed(request: BenchmarkRequest, seed: int) -> list[dict]:
    out = Path(request.out) / f"seed_{seed}"
    low, high = request.low_column, request.high_column
    rows: list[dict] = []
    split_dirs = {}
    for mode in request.modes:
        split = build_fidelity_split(
            request.data, request.smiles_column, low, high, request.high_sizes, mode, seed
        )
        split_dirs[mode] = split.write(out / mode / "split")
    first = split_dirs[request.modes[0]]
    # high-fidelity only: same train/val/test molecules, trained from scratch
    t = time.perf_counter()
    parts = [read_table(first / f"{p}.csv").assign(split=p) for p in ("train", "val", "test")]
    high_only = run_train(
        TrainRequest(
            data=pd.concat(parts, ignore_index=True),
            smiles_column="smiles",
            target_columns=[high],
            out=out / "high_only",
            split_type="column",
            split_column="split",
            model=request.model,
            train=replace(request.finetune, seed=seed),
            progress=request.progress,
        )
    )
    seconds = time.perf_counter() - t
    rows.append(
        _record(
            "high-only",
            "-",
            seed,
            _test_metrics(high_only, high),
            seconds,
            _val_rmse(high_only, high),
        )
    )
    if "transductive" in split_dirs:
        lin = linear_correction(split_dirs["transductive"], low, high)
        rows.append(_record("linear-correction", "transductive", seed, lin, 0.0))
    for mode, split_dir in split_dirs.items():
        t = time.perf_counter()
        pre_dir = out / mode / "pretrained"
        pre_request = TrainRequest(
            data=split_dir / "pretrain.csv",
            smiles_column="smiles",
            target_columns=[low],
            out=pre_dir,
            model=request.model,
            train=replace(request.pretrain, seed=seed),
            progress=request.progress,
        )
        if request.reuse_pretrained:
            pretrain_or_reuse(pre_request, request.pretrain_holdout)
        else:
            run_pretrain(pre_request, request.pretrain_holdout)
        log.info("seed %d %s: pretrained in %.0f s", seed, mode, time.perf_counter() - t)
        crossfit = None
        if mode == "inductive":
            t = time.perf_counter()
            rows.append(
                _record(
                    "linear-map-insample",
                    mode,
                    seed,
                    linear_map_of_prediction(pre_dir, split_dir, high),
                    time.perf_counter() - t,
                )
            )
            if request.crossfit_folds:
                t = time.perf_counter()
                crossfit = CrossFit(
                    split_dir / "pretrain.csv",
                    out / mode / "crossfit",
                    request.crossfit_folds,
                    request.pretrain_holdout,
                )
                oof, report = crossfit_predictions(crossfit, pre_dir, split_dir, seed)
                lin_map = linear_map_of_prediction(pre_dir, split_dir, high, oof)
                seconds = time.perf_counter() - t
                rows.append(_record("linear-map", mode, seed, lin_map, seconds))
                log.info(
                    "seed %d: %d fold models in %.0f s (%s)", seed, crossfit.folds, seconds, report
                )
        for name in request.strategies:
            strategy = get_strategy(name)
            if mode != "inductive" and strategy.inductive_only:
                log.info("seed %d: %s is inductive only, not run in %s mode", seed, name, mode)
                continue
            t = time.perf_counter()
            result = run_finetune(
                FinetuneRequest(
                    pretrained=pre_dir,
                    data=split_dir / "train.csv",
                    val_data=split_dir / "val.csv",
                    test_data=split_dir / "test.csv",
                    target_columns=[high],
                    out=out / mode / name,
                    strategy=name,
                    mode=mode,
                    low_columns=[low],
                    train=replace(request.finetune, seed=seed),
                    progress=request.progress,
                    crossfit=crossfit if strategy.augment == "label" else None,
                    keep_head=request.keep_head and strategy.can_keep_head,
                    unfreeze_after=0 if strategy.freezes_encoder else request.unfreeze_after,
                )
            )
            rows.append(
                _record(
                    name,
                    mode,
                    seed,
                    _test_metrics(result, high),
                    time.perf_counter() - t,
                    _val_rmse(result, high),
                )
            )
            log.info("seed %d %s %s: %s", seed, mode, name, rows[-1])
    return rows


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds per (method, mode), sorted by mean test RMSE."""
    g = results.groupby(["method", "mode"], sort=False)
    table = g.agg(
        rmse_mean=("rmse", "mean"),
        rmse_sd=("rmse", "std"),
        mae_mean=("mae", "mean"),
        mae_sd=("mae", "std"),
        seeds=("seed", "nunique"),
    ).reset_index()
    table = table.fillna({"rmse_sd": 0.0, "mae_sd": 0.0})
    return table.sort_values("rmse_mean").reset_index(drop=True)


def markdown_table(table: pd.DataFrame, units: str = "") -> str:
    u = f" ({units})" if units else ""
    lines = [f"| method | mode | test RMSE{u} | test MAE{u} | seeds |", "|---|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(
            f"| {r.method} | {r.mode} | {r.rmse_mean:.4f} ± {r.rmse_sd:.4f} | "
            f"{r.mae_mean:.4f} ± {r.mae_sd:.4f} | {r.seeds} |"
        )
    return "\n".join(lines) + "\n"


def bar_chart(table: pd.DataFrame, path: Path, title: str, units: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = zip(table["method"], table["mode"], strict=True)
    labels = [m if mode == "-" else f"{m}\n({mode})" for m, mode in pairs]
    colours = {"-": "grey", "transductive": "tab:blue", "inductive": "tab:orange"}
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(table)), 4))
    ax.bar(
        range(len(table)),
        table["rmse_mean"],
        yerr=table["rmse_sd"],
        capsize=3,
        color=[colours.get(m, "tab:green") for m in table["mode"]],
    )
    ax.set_xticks(range(len(table)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"test RMSE{f' ({units})' if units else ''}")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_reports(results: pd.DataFrame, out: Path, title: str, units: str = "") -> pd.DataFrame:
    table = summarise(results)
    results.to_csv(out / "results.csv", index=False)
    (out / "results.md").write_text(markdown_table(table, units))
    bar_chart(table, out / "results.png", title, units)
    return table


def run_benchmark(request: BenchmarkRequest) -> pd.DataFrame:
    """Run every seed (results are rewritten after each), -> summary table."""
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "request.json").write_text(
        json.dumps(
            {
                "data": str(request.data),
                "low": request.low_column,
                "high": request.high_column,
                "high_sizes": list(request.high_sizes),
                "seeds": list(request.seeds),
                "strategies": list(request.strategies),
                "modes": list(request.modes),
                "model": request.model,
                "pretrain": request.pretrain.to_dict(),
                "finetune": request.finetune.to_dict(),
                "pretrain_holdout": request.pretrain_holdout,
                "crossfit_folds": request.crossfit_folds,
                "keep_head": request.keep_head,
                "unfreeze_after": request.unfreeze_after,
                "reuse_pretrained": request.reuse_pretrained,
            },
            indent=2,
        )
    )
    rows: list[dict] = []
    table = pd.DataFrame()
    title = f"{request.low_column} → {request.high_column}"
    for seed in request.seeds:
        rows += run_seed(request, seed)
        table = write_reports(pd.DataFrame(rows), out, title, request.units)
    return table
