"""The shipped ADMET models, endpoint by endpoint, beside ADMET-AI's reported test metrics.

For each ADMET model (``molprop.pretrained_admet``) the test molecules of its scaffold split
(``split.csv``) are predicted from their SMILES through :class:`molprop.inference.Predictor`, as
a user would, and scored per endpoint with the metric the TDC ADMET group uses for it (MAE,
Spearman or AUROC; ``data/admet/endpoints.csv``) and the usual ones (RMSE, R², AUPRC). Beside
each: ADMET-AI's reported test metric (the ``admet.csv`` of the admet-ai 2.0.1 wheel, copied into
``endpoints.csv``). ADMET-AI's numbers come from TDC's splits of TDC's data, ours from a scaffold
split of our curated tables (often a different, larger source): context, not a head-to-head.
Beside that, the rank-1 entry of the TDC ADMET-group leaderboard for the same TDC dataset
(``benchmarks/results/tdc_leaderboard.csv``, read by ``benchmarks.tdc_leaderboard``).

An endpoint that the shipped ``admet`` panel answers with another model (its panel file's
``served_by``: hydration free energy, from ``hydration_free_energy``) is scored as the panel serves
it: that model on its own scaffold test part, labels from the endpoint's table in ``data/admet``
(by InChIKey), its interval's coverage from its ``metrics.json``; the ADMET model's own head is
reported beside it (``replaced``).

Second table: the shipped single-endpoint models against the ADMET model on a common held-out
set: the ADMET model's test molecules of that endpoint which the single-endpoint model never saw
(not in its train or validation split), so neither model trained on them.

    python -m benchmarks.admet_panel [--models pretrained]

writes ``benchmarks/results/admet_panel.json``, ``docs/results/admet.md`` and
``docs/results/admet.png``. ``--report`` only rewrites ``docs/results/admet.md`` from the saved
``admet_panel.json`` (no model is loaded or evaluated).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score, r2_score, roc_auc_score

from benchmarks.common import load_result, save_result
from benchmarks.tdc_leaderboard import SOURCE_PATH, SOURCE_REPO
from benchmarks.tdc_leaderboard import load as tdc_leaderboard
from molprop.artifact.coverage import clopper_pearson
from molprop.artifact.panel import read_panel
from molprop.chem.smiles import inchikey
from molprop.errors import InvalidInputError
from molprop.inference import Predictor
from molprop.pretrained_admet import endpoint_table, groups, merged_table

log = logging.getLogger("admet_panel")

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "results"
ADMET_DATA = REPO / "data" / "admet"
#: the shipped panel whose endpoints this page scores
PANEL = "admet"
#: ``benchmarks.admet_splits``'s summary (``benchmarks/results/<name>.json``): its tally under
#: ADMET-AI's protocol is quoted beside ours
PROTOCOL_SUMMARY = "admet_splits_summary"

#: endpoints whose table in ``data/admet`` comes from another source than the TDC dataset of
#: ADMET-AI's row (``data/admet/SOURCES.md``); the others share TDC's source (MoleculeNet's
#: Tox21, ClinTox and FreeSolv, AqSolDB, AstraZeneca's ChEMBL deposits, Zhu's LD50), curated
#: by our own rules
OTHER_SOURCE = {
    "bbb_b3db": "B3DB",
    "ames_pharmabench": "PharmaBench",
    "ppb_pharmabench": "PharmaBench",
}

#: shipped single-endpoint model -> (its target, the ADMET endpoint measuring the same thing)
SINGLE = {
    "solubility": ("logS", "solubility_aqsoldb"),
    "lipophilicity": ("logD_7.4", "lipophilicity_az"),
    "hydration_free_energy": ("hydration_free_energy", "hydration_free_energy"),
    "bbb_penetration": ("bbb_probability", "bbb_b3db"),
}


def key(smiles: str) -> str:
    """The molecule's InChIKey (the SMILES itself where RDKit cannot read it)."""
    try:
        return inchikey(smiles)
    except InvalidInputError:
        return smiles


def scores(task: str, y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """Every metric of one endpoint's test rows (NaN where undefined)."""
    out: dict[str, float] = {"n": int(len(y))}
    if task == "regression":
        out["mae"] = float(np.mean(np.abs(p - y)))
        out["rmse"] = float(math.sqrt(np.mean((p - y) ** 2)))
        out["r2"] = float(r2_score(y, p)) if len(y) > 1 else math.nan
        out["spearman"] = float(spearmanr(y, p).statistic) if len(y) > 2 else math.nan
    else:
        both = len(set(y.astype(int))) == 2
        out["auroc"] = float(roc_auc_score(y, p)) if both else math.nan
        out["auprc"] = float(average_precision_score(y, p)) if both else math.nan
        out["positives"] = int(y.sum())
    return out


def test_rows(directory: Path, table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the model's test split with their labels (``split.csv`` rows index the
    training table)."""
    split = pd.read_csv(directory / "split.csv", dtype={"smiles": str, "split": str})
    test = split[split["split"] == "test"]
    rows = table.iloc[test["row"].to_numpy()].reset_index(drop=True)
    if rows["smiles"].tolist() != test["smiles"].tolist():
        raise RuntimeError(f"{directory}/split.csv does not index the ADMET table")
    return rows


def coverage(directory: Path, endpoint: str) -> dict[str, Any] | None:
    """The 90 % interval's coverage on the test split (the calibration report of
    ``metrics.json``), with its Clopper–Pearson interval; None where the endpoint has no
    interval."""
    report = json.loads((directory / "metrics.json").read_text()).get("calibration", {})
    return report_coverage(report, endpoint)


def report_coverage(report: dict[str, Any], endpoint: str) -> dict[str, Any] | None:
    """:func:`coverage` from a calibration report (``metrics.json["calibration"]``)."""
    entry = report.get("test", {}).get(endpoint, {}).get("levels", {}).get("0.9")
    if not entry:
        return None
    n = int(entry["n"])
    k = int(round(entry["coverage"] * n))
    low, high = clopper_pearson(k, n)
    return {"coverage": entry["coverage"], "n": n, "cp_low": low, "cp_high": high,
            "holds": low <= 0.9 <= high}  # fmt: skip


#: both calibration reports of ``admet_regression`` (``metrics.json["calibration"]`` of the
#: validation-split and of the cross-validated calibration, the ``calibration.json`` files left
#: out), whichever is shipped: written by ``--stage calibrate-cv`` runs, read by the page
CALIBRATION_CHOICE = REPO / "benchmarks" / "results" / "admet_regression_calibration.json"
#: fixed before any cross-validated calibration of ``admet_regression`` was measured
CV_SHIP_RULE = (
    "The cross-validated calibration of `admet_regression` (5-fold scaffold cross-validation "
    "of its train + validation rows, each fold ensemble fine-tuned from the foundation model as "
    "the shipped one was: `python -m molprop.pretrained_admet --stage calibrate-cv`) replaces "
    "its validation-split calibration when, on the scaffold test split, more of the endpoints "
    "that both calibrate hold the 90 % Clopper–Pearson criterion; on a tie or fewer, the "
    "validation-split calibration stays. One comparison, decided by this rule alone."
)


#: fixed before any novelty-scaled cross-validated calibration of ``admet_regression`` was
#: measured (the shipped cross-validated one uses the std difficulty)
NOVELTY_SHIP_RULE = (
    "The cross-validated calibration of `admet_regression` with the novelty-scaled difficulty "
    "(each out-of-fold molecule's novelty measured against the training molecules of the fold "
    "model that predicted it, beta chosen on the out-of-fold molecules alone, as every "
    "validation-split calibration chooses it) replaces the shipped cross-validated calibration "
    "with the std difficulty when, on the scaffold test split, more of the endpoints that both "
    "calibrate hold the 90 % Clopper–Pearson criterion; on a tie or fewer, the std one stays. "
    "The same fold models, one comparison, decided by this rule alone."
)


def cv_decision(validation: dict[str, Any], cv: dict[str, Any], endpoints: list[str]) -> dict:
    """:data:`CV_SHIP_RULE` between the calibration reports ``validation`` and ``cv``
    (``metrics.json["calibration"]``) over ``endpoints``: the endpoints both calibrate, those
    each holds, and whether the cross-validated one ships."""
    covs = {e: (report_coverage(validation, e), report_coverage(cv, e)) for e in endpoints}
    both = [e for e, (v, c) in covs.items() if v is not None and c is not None]
    hold = {
        which: [e for e in both if covs[e][i]["holds"]]  # type: ignore[index]
        for i, which in enumerate(("validation", "cv"))
    }
    return {
        "endpoints": both,
        "hold_validation": hold["validation"],
        "hold_cv": hold["cv"],
        "only_cv": [e for e, (v, c) in covs.items() if v is None and c is not None],
        "ship_cv": len(hold["cv"]) > len(hold["validation"]),
    }


def calibration_rmse(directory: Path) -> dict[str, float]:
    """RMSE of the calibration molecules' residuals per target (``calibration.json``: the
    validation split's, or the out-of-fold ones), to set beside the test RMSE."""
    stored = json.loads((directory / "calibration.json").read_text())["targets"]
    return {
        name: float(np.sqrt(np.mean(np.square(target["residuals"]))))
        for name, target in stored.items()
        if target.get("residuals")
    }


def coverage_cell(report: dict[str, Any], endpoint: str) -> str:
    """A page cell: the 90 % test coverage of ``endpoint`` in a calibration report with its
    95 % Clopper–Pearson interval, mean width and verdict."""
    cov = report_coverage(report, endpoint)
    if cov is None:
        return "not calibrated"
    width = report["test"][endpoint]["levels"]["0.9"]["mean_width"]
    verdict = "holds" if cov["holds"] else "missed"
    return (
        f"{cov['coverage']:.3f} [{cov['cp_low']:.3f}, {cov['cp_high']:.3f}], "
        f"{_fmt(width)}: {verdict}"
    )


def check_same_weights(first: Path, second: Path) -> None:
    """Refuse two model directories whose member weights differ."""
    weights = [
        sorted((p.relative_to(d).as_posix(), p.read_bytes()) for p in (d / "members").rglob("*.*"))
        for d in (first, second)
    ]
    if weights[0] != weights[1]:
        raise RuntimeError(f"{first} and {second} are not the same model (their weights differ)")


def record_calibration_choice(validation: Path, cv: Path) -> Path:
    """Keep the calibration reports of two copies of ``admet_regression`` (same weights), one
    calibrated on its validation split and one cross-validated, in :data:`CALIBRATION_CHOICE`."""

    def report(directory: Path) -> dict[str, Any]:
        return json.loads((directory / "metrics.json").read_text())["calibration"]

    check_same_weights(validation, cv)
    reports: dict[str, Any] = {"validation": report(validation), "cv": report(cv)}
    if "cross_validation" not in reports["cv"]:
        raise RuntimeError(f"{cv} is not calibrated by cross-validation")
    reports["calibration_rmse"] = {
        "validation": calibration_rmse(validation),
        "cv": calibration_rmse(cv),
    }
    CALIBRATION_CHOICE.write_text(json.dumps(reports, indent=1) + "\n")
    return CALIBRATION_CHOICE


def record_novelty_choice(cv: Path, novelty: Path) -> Path:
    """Add to :data:`CALIBRATION_CHOICE` the calibration report of a copy of the
    cross-validated ``admet_regression`` (``cv``: same weights, same folds) recalibrated with
    the novelty-scaled difficulty (``novelty``), its betas and calibration RMSEs, for
    :data:`NOVELTY_SHIP_RULE`."""
    reports = json.loads(CALIBRATION_CHOICE.read_text())
    check_same_weights(cv, novelty)
    report = json.loads((novelty / "metrics.json").read_text())["calibration"]
    if report.get("fitted_on") != reports["cv"]["fitted_on"]:
        raise RuntimeError(f"{novelty} is not calibrated on the kept cross-validation's folds")
    targets = json.loads((novelty / "calibration.json").read_text())["targets"]
    if {t.get("difficulty") for t in targets.values()} != {"std+novelty"}:
        raise RuntimeError(f"{novelty} is not calibrated with the novelty-scaled difficulty")
    reports["cv_novelty"] = report
    reports["cv_novelty_beta"] = {name: t["beta"] for name, t in targets.items()}
    reports["calibration_rmse"]["cv_novelty"] = calibration_rmse(novelty)
    CALIBRATION_CHOICE.write_text(json.dumps(reports, indent=1) + "\n")
    return CALIBRATION_CHOICE


def novelty_choice_section(models: Path, endpoints: list[str]) -> list[str]:
    """The page's section on :data:`NOVELTY_SHIP_RULE` (empty until the novelty-scaled report
    is kept): each endpoint's 90 % test coverage with the std and the novelty-scaled
    difficulty of the cross-validated calibration, the beta chosen, the decision (the same
    count as :func:`cv_decision`, the std one in the place of the shipped one) and the
    difficulty ``models/admet_regression`` ships."""
    if not CALIBRATION_CHOICE.exists():
        return []
    reports = json.loads(CALIBRATION_CHOICE.read_text())
    if "cv_novelty" not in reports:
        return []
    decision = cv_decision(reports["cv"], reports["cv_novelty"], endpoints)
    stored = json.loads((models / "admet_regression" / "calibration.json").read_text())
    shipped = {t.get("difficulty", "std") for t in stored["targets"].values()}
    betas = reports["cv_novelty_beta"]

    lines = [
        "",
        "## Std or novelty-scaled difficulty of the cross-validated calibration",
        "",
        NOVELTY_SHIP_RULE,
        "",
        "| endpoint | std: coverage [95 % CP], mean width | novelty-scaled: coverage [95 % CP], "
        "mean width | beta |",
        "|---|---|---|---|",
    ]
    for e in endpoints:
        beta = betas.get(e)
        lines.append(
            f"| {e} | {coverage_cell(reports['cv'], e)} | {coverage_cell(reports['cv_novelty'], e)} | "
            f"{'–' if beta is None else _fmt(beta)} |"
        )
    n = len(decision["endpoints"])
    chosen = "novelty-scaled" if decision["ship_cv"] else "std"
    lines += [
        "",
        f"Endpoints both calibrate: {n}; holding the criterion: std {len(decision['hold_validation'])}"
        f" of {n}, novelty-scaled {len(decision['hold_cv'])} of {n}. The rule keeps the "
        f"**{chosen}** difficulty; `admet_regression` ships "
        + ("the novelty-scaled one." if shipped == {"std+novelty"} else "the std one."
           if shipped == {"std"} else "a mix: " + ", ".join(sorted(shipped)) + "."),
    ]  # fmt: skip
    return lines


def regression_endpoints(models: Path) -> list[str]:
    """The targets of ``models/admet_regression`` (from its config.json)."""
    config = json.loads((models / "admet_regression" / "config.json").read_text())
    return list(config["task"]["target_names"])


def calibration_choice_section(models: Path, endpoints: list[str]) -> list[str]:
    """The page's section on :data:`CV_SHIP_RULE`: both calibrations' 90 % test coverage per
    endpoint, the decision, and which one ``models/admet_regression`` ships (empty without
    :data:`CALIBRATION_CHOICE`)."""
    if not CALIBRATION_CHOICE.exists():
        return []
    reports = json.loads(CALIBRATION_CHOICE.read_text())
    decision = cv_decision(reports["validation"], reports["cv"], endpoints)
    shipped = json.loads((models / "admet_regression" / "metrics.json").read_text())
    fitted = shipped["calibration"]["fitted_on"]
    which = next((k for k, r in reports.items() if r["fitted_on"] == fitted), None)
    lines = [
        "",
        "## Validation-split or cross-validated calibration of admet_regression",
        "",
        CV_SHIP_RULE,
        "",
        f"- the validation-split calibration: fitted on the {reports['validation']['fitted_on']}",
        f"- the cross-validated one: fitted on {reports['cv']['fitted_on']}",
        "",
        "| endpoint | validation-split: coverage [95 % CP], mean width | cross-validated: "
        "coverage [95 % CP], mean width | test RMSE ÷ calibration RMSE: validation split, "
        "out of fold |",
        "|---|---|---|---|",
    ]
    test_rmse = shipped.get("test", {}).get("ensemble", {})
    ratios = reports.get("calibration_rmse", {})

    def ratio(which: str, endpoint: str) -> str:
        calib, test = ratios.get(which, {}).get(endpoint), test_rmse.get(f"rmse/{endpoint}")
        return "–" if not calib or test is None else f"{test / calib:.2f}"

    for e in endpoints:
        lines.append(
            f"| {e} | {coverage_cell(reports['validation'], e)} | {coverage_cell(reports['cv'], e)} | "
            f"{ratio('validation', e)}, {ratio('cv', e)} |"
        )
    n = len(decision["endpoints"])
    chosen = "cross-validated" if decision["ship_cv"] else "validation-split"
    lines += [
        "",
        f"Endpoints both calibrate: {n}; holding the criterion: validation split "
        f"{len(decision['hold_validation'])} of {n}, cross-validated {len(decision['hold_cv'])} "
        f"of {n}. The rule picks the **{chosen}** calibration; `admet_regression` ships the "
        + (
            {"validation": "validation-split", "cv": "cross-validated"}[which] + " one."
            if which
            else "calibration fitted on: " + fitted + " (neither of the two)."
        ),
    ]
    lines.append(
        "The last column compares the errors of the test molecules with those of the molecules "
        "each calibration was fitted on (the shipped weights' test RMSE over the calibration "
        "residuals' RMSE): a conformal interval keeps its level only where the two are alike. "
        "Above 1 the test part is harder than what the intervals learnt and they tend to "
        "under-cover; below 1, to over-cover."
    )
    if decision["only_cv"]:
        lines.append(
            f"Calibrated only cross-validated (too few validation molecules): "
            f"{_and(decision['only_cv'])}."
        )
    return lines


def panel_owners(models: Path) -> dict[str, str]:
    """endpoint -> the model the shipped panel answers it with where that is not its ADMET
    model (the panel file's ``served_by``; empty without a panel file)."""
    path = models / "panels" / f"{PANEL}.json"
    return dict(read_panel(path).served_by) if path.exists() else {}


def served_test(directory: Path, endpoint: str) -> tuple[np.ndarray, np.ndarray, int]:
    """The model in ``directory`` on its own test part, scored against ``endpoint``'s table of
    ``data/admet`` (matched by InChIKey) -> (labels, predictions of the target ``endpoint``,
    test molecules without a label there)."""
    split = pd.read_csv(directory / "split.csv", dtype={"smiles": str, "split": str})
    smiles = split.loc[split["split"] == "test", "smiles"].tolist()
    label = str(endpoint_table().loc[endpoint, "label"])
    table = pd.read_csv(ADMET_DATA / f"{endpoint}.csv.gz", dtype={"inchikey": str})
    by_key = dict(zip(table["inchikey"], table[label]))
    y = np.array([by_key.get(key(s), np.nan) for s in smiles], dtype=float)
    pred = Predictor.from_pretrained(directory).predict(smiles, interval=None)
    p = pred[endpoint].to_numpy(dtype=float, na_value=np.nan)
    known = np.isfinite(y) & np.isfinite(p)
    return y[known], p[known], int(np.isnan(y).sum())


def endpoint_scores(models: Path) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    """Per endpoint: our test metrics (SMILES in, as a user predicts) beside ADMET-AI's; an
    endpoint the panel answers with another model is scored as that model (``replaced``: the
    ADMET model's own head)."""
    info = endpoint_table()
    owners = panel_owners(models)
    rows, tests = [], {}
    for name, group in groups().items():
        directory = models / name
        if not (directory / "config.json").exists():
            log.warning("%s: not built, skipped", directory)
            continue
        predictor = Predictor.from_pretrained(directory)
        table = merged_table(group)
        test = test_rows(directory, table)
        pred = predictor.predict(test["smiles"].tolist(), interval=None)
        tests[name] = pd.concat([test, pred.add_prefix("pred_")], axis=1)
        for endpoint in group.endpoints:
            known = test[endpoint].notna() & pred[endpoint].notna()
            y = test.loc[known, endpoint].to_numpy(float)
            p = pred.loc[known, endpoint].to_numpy(float)
            row = info.loc[endpoint]
            metric = str(row["tdc_metric"]).lower()
            ours = scores(group.task_type, y, p)
            serving, replaced, unlabelled = name, None, 0
            owner = owners.get(endpoint, name)
            if owner != name and (models / owner / "config.json").exists():
                report = json.loads((directory / "metrics.json").read_text())
                reason = report.get("calibration", {}).get("not_calibrated_targets", {})
                split = pd.read_csv(directory / "split.csv", dtype={"smiles": str})
                labelled = table[endpoint].notna().to_numpy()[split["row"].to_numpy()]
                replaced = {
                    "model": name,
                    "labelled": split.loc[labelled, "split"].value_counts().to_dict(),
                    "value": ours.get(metric, math.nan),
                    "coverage_90": coverage(directory, endpoint),
                    "not_calibrated": reason.get(endpoint, ""),
                    **{f"test_{k}": v for k, v in ours.items()},
                }
                serving = owner
                y, p, unlabelled = served_test(models / owner, endpoint)
                ours = scores(group.task_type, y, p)
            rows.append(
                {
                    "endpoint": endpoint,
                    "model": serving,
                    "task": group.task_type,
                    "unit": row["unit"],
                    "metric": row["tdc_metric"],
                    "value": ours.get(metric, math.nan),
                    "not_predicted": int((test[endpoint].notna() & pred[endpoint].isna()).sum()),
                    "admet_ai_metric": row["admet_ai_metric"]
                    if isinstance(row["admet_ai_metric"], str)
                    else "",
                    "admet_ai_value": float(row["admet_ai_value"])
                    if isinstance(row["admet_ai_value"], str)
                    else math.nan,
                    "ours_in_admet_ai_metric": ours.get(
                        str(row["admet_ai_metric"]).lower(), math.nan
                    ),
                    "coverage_90": coverage(models / serving, endpoint),
                    **({"replaced": replaced, "unlabelled": unlabelled} if replaced else {}),
                    **{f"test_{k}": v for k, v in ours.items()},
                }
            )
    return rows, tests


def common_held_out(models: Path, tests: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Each shipped single-endpoint model against the ADMET model on the ADMET test molecules
    of that endpoint which the single-endpoint model did not train or validate on."""
    by_endpoint = {e: name for name, g in groups().items() for e in g.endpoints}
    out = []
    for single, (target, endpoint) in SINGLE.items():
        admet = by_endpoint[endpoint]
        if admet not in tests or not (models / single / "split.csv").exists():
            continue
        seen = pd.read_csv(models / single / "split.csv", dtype={"smiles": str, "split": str})
        seen_keys = {key(s) for s in seen.loc[seen["split"] != "test", "smiles"]}
        frame = tests[admet][tests[admet][endpoint].notna()].reset_index(drop=True)
        keep = np.array([key(s) not in seen_keys for s in frame["smiles"]])
        frame = frame[keep].reset_index(drop=True)
        single_pred = Predictor.from_pretrained(models / single).predict(
            frame["smiles"].tolist(), interval=None
        )
        both = frame[f"pred_{endpoint}"].notna() & single_pred[target].notna()
        y = frame.loc[both, endpoint].to_numpy(float)
        task = groups()[admet].task_type
        out.append(
            {
                "endpoint": endpoint,
                "single_model": single,
                "admet_model": admet,
                "n": int(both.sum()),
                "single": scores(task, y, single_pred.loc[both, target].to_numpy(float)),
                "admet": scores(task, y, frame.loc[both, f"pred_{endpoint}"].to_numpy(float)),
            }
        )
    return out


def _fmt(value: float, digits: int = 3) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def leaderboard_cells(endpoints: list[str]) -> dict[str, str]:
    """Per endpoint: the TDC leaderboard's rank 1 for the TDC dataset of its ADMET-AI row
    (``admet_ai_id`` of ``endpoints.csv``), as "metric mean ± std (model)"; "–" where that
    dataset is not in TDC's ADMET group."""
    tdc_name = endpoint_table()["admet_ai_id"]
    board = tdc_leaderboard()
    cells = {}
    for endpoint in endpoints:
        name = tdc_name.get(endpoint)
        if isinstance(name, str) and name in board.index:
            b = board.loc[name]
            cells[endpoint] = (
                f"{b['metric']} {b['best_value']:.3f} ± {b['best_std']:.3f} ({b['best_model']})"
            )
        else:
            cells[endpoint] = "–"
    return cells


#: ADMET-AI's metrics where a lower value is better (the others: AUROC, AUPRC, Spearman)
LOWER_BETTER = ("MAE",)


def admet_ai_tally(rows: list[dict[str, Any]]) -> str:
    """The sentence of the target: on how many endpoints that ADMET-AI also reports molprop's
    metric (in ADMET-AI's metric) is at least as good as ADMET-AI's reported one."""

    def given(x: Any) -> bool:
        return x is not None and bool(np.isfinite(x))

    shared = [r for r in rows if given(r["admet_ai_value"]) and given(r["ours_in_admet_ai_metric"])]
    won = [
        r
        for r in shared
        if (r["ours_in_admet_ai_metric"] <= r["admet_ai_value"])
        == (r["admet_ai_metric"] in LOWER_BETTER)
        or r["ours_in_admet_ai_metric"] == r["admet_ai_value"]
    ]
    share = len(won) / len(shared) if shared else 0.0
    verdict = "met" if shared and share >= 0.6 else "missed"
    names = ", ".join(r["endpoint"] for r in won) or "none"
    return (
        f"Against ADMET-AI's reported metric: at least as good on {len(won)} of {len(shared)} "
        f"endpoints both report ({share:.0%}; target ≥ 60 %: {verdict}): {names}. Ours are "
        "scaffold-split test parts, ADMET-AI's random splits (above). The same recipes under "
        "ADMET-AI's protocol (random splits, 5 seeds), and the small endpoints' scaffold "
        "metrics over 5 seeds: [admet_splits.md](admet_splits.md) "
        "(`python -m benchmarks.admet_splits`)."
    )


def _and(names: list[str]) -> str:
    """``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def protocol_tally() -> list[str]:
    """The tally of ``benchmarks.admet_splits`` under ADMET-AI's protocol, as page lines (none
    before it has run)."""
    saved = load_result(PROTOCOL_SUMMARY)
    if not saved or not saved.get("tally"):
        return []
    return ["", f"Like for like ([admet_splits.md](admet_splits.md)): {saved['tally']}"]


def write_page(
    rows: list[dict[str, Any]],
    common: list[dict[str, Any]],
    sizes: dict,
    models: Path = REPO / "pretrained",
) -> Path:
    board = tdc_leaderboard()
    best = leaderboard_cells([r["endpoint"] for r in rows])
    lines = [
        "# ADMET panel: the shipped endpoints beside ADMET-AI",
        "",
        "Written by `python -m benchmarks.admet_panel` from the shipped models (`make "
        "pretrained-admet`). Our numbers: the test part of each model's scaffold split (80/10/10, "
        "seed 0) of the curated tables in `data/admet` (SOURCES.md there), predicted from SMILES "
        "as a user does. ADMET-AI's: its reported test metric (admet-ai 2.0.1 wheel, "
        "`admet_ai/resources/data/admet.csv`) on TDC's data. The file does not say which split; "
        "ADMET-AI's script that trains on all TDC ADMET data (`swansonk14/admet_ai` `scripts/train_tdc_admet_all.py` at "
        "commit `31199f2`) runs chemprop v1's `chemprop_train --num_folds 5` with no split "
        "type, i.e. chemprop v1's default: 5 random 80/10/10 splits, where test molecules "
        "share scaffolds with training ones. That fits several of its numbers beating the TDC "
        "leaderboard's rank 1, scored on scaffold splits (e.g. lipophilicity MAE 0.407 against "
        "0.460); ours are scaffold-split test parts, a harder test. For several endpoints "
        "it is other data (e.g. TDC's BBB_Martins vs our B3DB, TDC's PPBR_AZ vs PharmaBench PPB). "
        "The splits and sets differ: this is context, not a claim of victory. MAE is in the "
        "endpoint's unit; AUROC / Spearman are unitless.",
        "",
        "TDC leaderboard best: the rank-1 entry of the TDC ADMET-group leaderboard for the TDC "
        "dataset of ADMET-AI's row, in the metric TDC ranks it by (mean ± std over TDC's five "
        f"seeds), read from `{SOURCE_REPO}` at commit `{board['source_commit'].iloc[0][:10]}` "
        f"(`{SOURCE_PATH}`, one leaderboard per TDC dataset name; "
        "`benchmarks/results/tdc_leaderboard.csv` and its SOURCES note). Those models are "
        "scored on TDC's scaffold split of TDC's data; ours on our own scaffold split of our "
        "curated tables: the TDC dataset's source for "
        + _and([e for e, c in best.items() if c != "–" and e not in OTHER_SOURCE])
        + ", other data for "
        + _and([f"{e} ({OTHER_SOURCE[e]})" for e, c in best.items() if e in OTHER_SOURCE])
        + ". Context, not a claim of victory. "
        "For clearance_hepatocyte_az TDC ranks by Spearman, ADMET-AI reports MAE.",
        "",
        "| endpoint | model | unit | n test | TDC metric | molprop | ADMET-AI metric | molprop "
        "(same metric) | ADMET-AI | TDC leaderboard best (model) | 90 % interval coverage "
        "(95 % CP) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cov = r["coverage_90"]
        shown = "–" if r["task"] == "classification" else "no interval (not calibrated)"
        if cov:
            verdict = "holds" if cov["holds"] else "missed"
            shown = (
                f"{cov['coverage']:.3f} [{cov['cp_low']:.3f}, {cov['cp_high']:.3f}], "
                f"n {cov['n']}: {verdict}"
            )
        lines.append(
            f"| {r['endpoint']} | {r['model']} | {r['unit']} | {r['test_n']} | {r['metric']} | "
            f"{_fmt(r['value'])} | {r['admet_ai_metric'] or '–'} | "
            f"{_fmt(r['ours_in_admet_ai_metric'])} | {_fmt(r['admet_ai_value'])} | "
            f"{best[r['endpoint']]} | {shown} |"
        )
    held = [r["coverage_90"]["holds"] for r in rows if r["coverage_90"]]
    lines += [
        "",
        f"Coverage of the 90 % interval on the test split: the nominal level lies in the 95 % "
        f"Clopper–Pearson interval of the measured coverage for {sum(held)} of {len(held)} "
        "calibrated regression endpoints (the scaffold test part is a shift from the "
        "molecules the intervals were calibrated on).",
        *calibration_choice_section(models, regression_endpoints(models)),
        *novelty_choice_section(models, regression_endpoints(models)),
        "",
        admet_ai_tally(rows),
        *protocol_tally(),
    ]
    for r in rows:
        old = r.get("replaced")
        if not old:
            continue
        parts = old.get("labelled", {})
        both = next((c for c in common if c["endpoint"] == r["endpoint"]), None)
        split_text = (
            f"its split put {parts.get('train', '?')} of the endpoint's molecules in train, "
            f"{parts.get('val', '?')} in validation and {parts.get('test', '?')} in test "
            f"(test {r['metric']} {_fmt(old['value'])})"
        )
        own = old.get("coverage_90")
        if own:  # the head is calibrated (out of fold), on few test molecules
            head = (
                f"`{old['model']}` head of the same endpoint is not served: {split_text}; its "
                f"interval covers {own['coverage']:.3f} of its {own['n']} test molecules (95 % "
                f"CP [{own['cp_low']:.3f}, {own['cp_high']:.3f}]), too few to judge it."
            )
        else:
            head = (
                f"`{old['model']}` head of the same endpoint is not served: it has no interval "
                f"({old['not_calibrated'] or 'not calibrated'}), because {split_text}."
            )
        lines += [
            "",
            f"**{r['endpoint']}**: the `{PANEL}` panel answers it with `{r['model']}` (its "
            f"panel file's `served_by`); the row above is that model on its own scaffold test "
            f"part ({r['test_n']} molecules it neither trained nor was calibrated on; labels from "
            f"`data/admet/{r['endpoint']}.csv.gz`, {r.get('unlabelled', 0)} unmatched). The "
            + head,
        ]
        if both:
            s_mae, a_mae = both["single"].get("mae", math.nan), both["admet"].get("mae", math.nan)
            lines[-1] += (
                f" On the {both['n']} molecules neither model trained or validated on (second "
                f"table) they are about equally accurate (MAE {_fmt(s_mae)} against "
                f"{_fmt(a_mae)}); `{r['model']}` brings an interval judged on "
                f"{r['test_n']} test molecules and a domain of the endpoint's own training "
                "molecules."
            )
    lines += [
        "",
        "## Shipped single-endpoint models against the ADMET models",
        "",
        "On the ADMET model's test molecules of the endpoint that the single-endpoint model did "
        "not train or validate on (so neither saw them).",
        "",
        "| endpoint | single model | n | single: MAE / AUROC | ADMET model: MAE / AUROC | "
        "single: RMSE / AUPRC | ADMET model: RMSE / AUPRC |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in common:
        a, s = c["admet"], c["single"]
        first, second = ("mae", "rmse") if "mae" in a else ("auroc", "auprc")
        lines.append(
            f"| {c['endpoint']} | {c['single_model']} | {c['n']} | {_fmt(s[first])} | "
            f"{_fmt(a[first])} | {_fmt(s[second])} | {_fmt(a[second])} |"
        )
    speed = load_result("admet_throughput")
    if speed:
        lines += [
            "",
            "## Whole-panel throughput",
            "",
            f"`python -m benchmarks.admet_throughput`: the same {speed['n']:,} drug-like SMILES "
            "(a seeded sample of `data/admet`), each tool as one whole process (model loading "
            f"included), {speed['threads']} threads, one after the other, on "
            f"{speed['machine'].get('cpu', 'this machine')}; each tool once in one process "
            f"and once with {speed.get('workers', 2)} worker processes (molprop "
            "`--num-workers`: each worker answers slices of the rows with the whole panel; "
            "ADMET-AI `--num_workers`: its data-loader workers featurise). Without workers "
            "molprop computes the physchem block (RDKit properties and alerts, about half of "
            "the work) in one spawned process while the models run (its default for 500+ rows "
            "on 2+ cores; the output is the one-process output), so on 2 cores its workers "
            "add little.",
            "",
            "| tool | workers | seconds | molecules/s | columns out | load before |",
            "|---|---|---|---|---|---|",
        ]
        names = {"molprop": "molprop `predict --model admet` (29 endpoints with std, interval, "
                 "percentile, domain; physchem and alerts)",
                 "admet_ai": "ADMET-AI 2.0.1 `admet_predict` (41 endpoints, physchem)"}  # fmt: skip
        for tool, r in speed["tools"].items():
            base, _, workers = tool.partition("_workers")
            lines.append(
                f"| {names.get(base, base)} | {workers or 0} | {r['seconds']} | "
                f"{r['molecules_per_s']} | {r['columns_out']} | {r.get('load_avg_before', '')} |"
            )
        tools = speed["tools"]
        for tag in sorted({t.partition("_workers")[2] for t in tools}):
            suffix = f"_workers{tag}" if tag else ""
            ours, theirs = tools.get(f"molprop{suffix}"), tools.get(f"admet_ai{suffix}")
            if ours and theirs:
                lines.append(
                    f"\nWith {tag or 0} workers molprop answers "
                    f"{ours['molecules_per_s'] / theirs['molecules_per_s']:.2f}x as many "
                    "molecules per second as ADMET-AI."
                )
        fastest = {
            tool: max(r["molecules_per_s"] for t, r in tools.items() if t.startswith(tool))
            for tool in ("molprop", "admet_ai")
            if any(t.startswith(tool) for t in tools)
        }
        if len(fastest) == 2:
            ratio = fastest["molprop"] / fastest["admet_ai"]
            verdict = "met" if ratio >= 2 else "missed"
            lines.append(
                f"\nTarget (each tool at its faster setting): ≥ 2x ADMET-AI's molecules per "
                f"second: {ratio:.2f}x, {verdict}."
            )
    lines += ["", "## Size", ""]
    lines += [f"- `{k}`: {v / 1e6:.1f} MB" for k, v in sizes.items()]
    lines += ["", "![molprop against ADMET-AI per endpoint](admet.png)", ""]
    DOCS.mkdir(parents=True, exist_ok=True)
    path = DOCS / "admet.md"
    path.write_text("\n".join(lines))
    return path


def plot(rows: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if math.isfinite(r["admet_ai_value"])]
    auroc = [r for r in shown if r["admet_ai_metric"] == "AUROC"]
    mae = [r for r in shown if r["admet_ai_metric"] == "MAE"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [3, 2]})
    for ax, part, label in ((axes[0], auroc, "AUROC (higher is better)"),
                            (axes[1], mae, "MAE / ADMET-AI MAE (lower is better)")):  # fmt: skip
        x = np.arange(len(part))
        if label.startswith("MAE"):
            ours = [r["ours_in_admet_ai_metric"] / r["admet_ai_value"] for r in part]
            theirs = [1.0] * len(part)
        else:
            ours = [r["ours_in_admet_ai_metric"] for r in part]
            theirs = [r["admet_ai_value"] for r in part]
        ax.bar(x - 0.2, ours, 0.4, label="molprop (our scaffold split)")
        ax.bar(x + 0.2, theirs, 0.4, label="ADMET-AI (reported, TDC split)")
        ax.set_xticks(x, [r["endpoint"] for r in part], rotation=70, ha="right", fontsize=8)
        ax.set_ylabel(label)
        if not label.startswith("MAE"):
            ax.set_ylim(0.5, 1.0)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = DOCS / "admet.png"
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=str(REPO / "pretrained"))
    parser.add_argument(
        "--report",
        action="store_true",
        help="only rewrite docs/results/admet.md from benchmarks/results/admet_panel.json",
    )
    parser.add_argument(
        "--calibration-choice",
        nargs=2,
        metavar=("VALIDATION_DIR", "CV_DIR"),
        help="keep the calibration reports of admet_regression calibrated on its validation "
        "split and cross-validated (two copies of the same model) for the page, then stop",
    )
    parser.add_argument(
        "--novelty-choice",
        nargs=2,
        metavar=("CV_DIR", "NOVELTY_DIR"),
        help="add the report of the cross-validated admet_regression recalibrated with the "
        "novelty-scaled difficulty (a copy of CV_DIR) for the page, then stop",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.calibration_choice:
        log.info("wrote %s", record_calibration_choice(*map(Path, args.calibration_choice)))
        return 0
    if args.novelty_choice:
        log.info("wrote %s", record_novelty_choice(*map(Path, args.novelty_choice)))
        return 0
    if args.report:
        saved = load_result("admet_panel")
        if saved is None:
            parser.error("no benchmarks/results/admet_panel.json: run without --report first")
        page = write_page(
            saved["endpoints"], saved["common_held_out"], saved["bytes"], Path(args.models)
        )
        log.info("wrote %s", page)
        return 0
    models = Path(args.models)
    rows, tests = endpoint_scores(models)
    common = common_held_out(models, tests)
    shown = [*groups(), *(m for m in panel_owners(models).values() if m not in groups())]
    sizes = {
        name: sum(f.stat().st_size for f in (models / name).rglob("*") if f.is_file())
        for name in shown
        if (models / name).exists()
    }
    save_result("admet_panel", {"endpoints": rows, "common_held_out": common, "bytes": sizes})
    plot(rows)
    log.info("wrote %s", write_page(rows, common, sizes, models))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
