"""Calibrated intervals of the shipped models (issue 18): coverage and width on the scaffold
test split of each regression model, per applicability-domain bin; the same on an external set
built from shipped data; ECE / Brier of the BBBP classifier before and after Platt scaling.

Every calibration here is the one stored in ``pretrained/<name>/calibration.json``: fitted on
out-of-fold predictions of train + validation (5-fold scaffold cross-validation,
``python -m molprop.pretrained_recipes --stage calibrate-cv``) for the models whose recipe says
``calibration="cv"``, else on the validation split (``--stage calibrate``); for comparison the
validation-split calibration of every model is refitted here and scored on the same molecules
(the "validation" columns: the shipped calibration before cross-validation). The test and
external molecules are only predicted and scored. Baselines for context, computed on the same
predictions: the naive ensemble interval ``mean ± z·std`` and plain (not normalised, pooled)
split-conformal intervals fitted on the same validation split (crepes).

Checks (from the issue): overall coverage of 90 % intervals within 87-93 %; in-domain and
out-of-domain bins within ±5 % of nominal where they have >= 30 molecules. Misses are reported
as misses.

External set: only one property has an honest one. ``data/qm9/micro_qm9.csv.gz`` (graphium's
1,006-molecule QM9 sample, MoleculeNet format) carries the same HOMO-LUMO gap (B3LYP/6-31G(2df,p),
Hartree -> eV) as the QM9 part the homo_lumo_gap model was trained on; the molecules that are
also in that part (train, validation or test; canonical SMILES) are removed. The other shipped
tables of solubility (ESOL.csv.gz), lipophilicity (Lipophilicity.csv.gz) and hydration free
energy (FreeSolv.csv.gz) are the same measurements as the training tables, so no external set
exists for them in the repository.

Usage: python -m benchmarks.calibration  (writes benchmarks/results/calibration.json and
docs/results/calibration.md; ~1 min on a laptop CPU)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
from rdkit import Chem, RDLogger

from molprop.artifact.calibration import Calibration, ConformalTarget
from molprop.inference import Predictor
from molprop.pretrained_recipes import HARTREE_EV, PRETRAINED, RECIPES, load_data, split_sets
from molprop.training.calibrate import LabelledSet, measure, raw_predictions
from molprop.training.metrics import interval_metrics

REPO = Path(__file__).resolve().parents[1]
OUT_JSON = REPO / "benchmarks" / "results" / "calibration.json"
OUT_MD = REPO / "docs" / "results" / "calibration.md"
LEVEL = 0.9
OVERALL_BAND = (0.87, 0.93)
BIN_TOLERANCE, BIN_MIN = 0.05, 30
REGRESSION = [n for n, r in RECIPES.items() if r.task_type == "regression"]
#: the cross-validated calibrations measured in session 25 (``--stage calibrate-cv``, out-of-fold
#: predictions of train + validation; fold models not kept): kept here so the comparison can be
#: rerun; the shipped models are calibrated on their validation split
CV_CALIBRATIONS = REPO / "benchmarks" / "results" / "calibration_cv"
#: shipped regression models without a measured cross-validated calibration, and why
NOT_RECALIBRATED = {
    "lipophilicity": "5-fold CV = 15 more trainings of 3,360 molecules; the shipped ensemble "
    "took 2,514 s to train, so about 3.5 h of CPU: did not fit the session's CPU budget",
    "homo_lumo_gap": "5-fold CV = 15 more trainings of 5,815 molecules (shipped ensemble: "
    "1,607 s), about 2.2 h of CPU: did not fit the session's CPU budget",
}


def plain_conformal(val: LabelledSet, raw_val, raw_test, test: LabelledSet) -> dict:
    """Pooled split-conformal on |residual| (no std, no bins), fitted on the validation split."""
    from crepes import ConformalRegressor

    keep_v = raw_val.ok & np.isfinite(val.targets[:, 0])
    keep_t = raw_test.ok & np.isfinite(test.targets[:, 0])
    cr = ConformalRegressor().fit(val.targets[keep_v, 0] - raw_val.mean[keep_v, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = cr.predict_int(raw_test.mean[keep_t, 0], confidence=LEVEL)
    y = test.targets[keep_t, 0]
    out = interval_metrics(y, iv[:, 0], iv[:, 1])
    if raw_test.in_domain is not None:
        d = raw_test.in_domain[keep_t]
        out["bins"] = {
            "in_domain": interval_metrics(y[d], iv[d, 0], iv[d, 1]),
            "out_of_domain": interval_metrics(y[~d], iv[~d, 0], iv[~d, 1]),
        }
    return out


def checks(report: dict) -> dict:
    """Pass / miss of the issue's criteria for the 90 % intervals of one set."""
    cov = report["coverage"]
    out = {"overall": {"coverage": cov, "band": list(OVERALL_BAND)}}
    out["overall"]["pass"] = OVERALL_BAND[0] <= cov <= OVERALL_BAND[1]
    for name, b in report.get("bins", {}).items():
        entry = {"coverage": b["coverage"], "n": b["n"]}
        if b["n"] >= BIN_MIN:
            entry["pass"] = abs(b["coverage"] - LEVEL) <= BIN_TOLERANCE
        else:
            entry["pass"] = None  # fewer than 30 molecules: not checked
        out[name] = entry
    return out


def score(name: str, predictor: Predictor, cal: Calibration, test: LabelledSet, val=None):
    raw_test = raw_predictions(predictor, test)
    measured = measure(cal, predictor, test, levels=(0.8, 0.9, 0.95), raw=raw_test)
    target = predictor.target_names[0]
    entry = measured[target]
    entry["checks"] = checks(entry["levels"]["0.9"])
    keep = raw_test.ok & np.isfinite(test.targets[:, 0])
    entry["rmse"] = float(np.sqrt(np.mean((raw_test.mean[keep, 0] - test.targets[keep, 0]) ** 2)))
    residuals = cal.targets[target].residuals  # of the calibration set (out of fold for CV)
    entry["rmse_calibration_set"] = float(np.sqrt(np.mean(residuals**2)))
    if val is not None:
        raw_val = raw_predictions(predictor, val)
        entry["plain_conformal_0.9"] = plain_conformal(val, raw_val, raw_test, test)
        kv = raw_val.ok & np.isfinite(val.targets[:, 0])
        entry["rmse_validation"] = float(
            np.sqrt(np.mean((raw_val.mean[kv, 0] - val.targets[kv, 0]) ** 2))
        )
        cv_cal = Calibration.load(CV_CALIBRATIONS / name)
        if cv_cal is not None:  # the cross-validated alternative, measured on the same test rows
            got = measure(cv_cal, predictor, test, levels=(LEVEL,), raw=raw_test)[target]
            entry["cv_calibration"] = {
                "n": cv_cal.n,
                "fitted_on": cv_cal.fitted_on,
                "rmse_calibration_set": float(
                    np.sqrt(np.mean(cv_cal.targets[target].residuals ** 2))
                ),
                "0.9": got["levels"]["0.9"],
                "checks": checks(got["levels"]["0.9"]),
            }
    return entry


def external_qm9(directory: Path) -> tuple[LabelledSet, dict]:
    """micro_qm9 molecules not in the model's QM9 part, with the gap in eV."""
    RDLogger.DisableLog("rdApp.*")
    micro = pd.read_csv(REPO / "data" / "qm9" / "micro_qm9.csv.gz")
    part = load_data(RECIPES["homo_lumo_gap"])

    def canonical(smi: str) -> str | None:
        mol = Chem.MolFromSmiles(smi)
        return None if mol is None else Chem.MolToSmiles(mol)

    seen = {canonical(s) for s in part["smiles"]}
    keys = [canonical(s) for s in micro["smiles"]]
    keep = np.array([k is not None and k not in seen for k in keys])
    kept = micro[keep].reset_index(drop=True)
    predictor = Predictor.from_pretrained(directory)
    items = predictor.featurize(kept["smiles"].tolist())
    targets = (kept["gap"].to_numpy(dtype=float) * HARTREE_EV)[:, None]
    info = {
        "source": "data/qm9/micro_qm9.csv.gz (gap, Hartree x 27.211386 -> eV)",
        "rows": len(micro),
        "removed_in_training_part": int(sum(k in seen for k in keys if k is not None)),
        "unparsable": int(sum(k is None for k in keys)),
        "used": len(kept),
    }
    return LabelledSet(items, kept["smiles"].tolist(), targets), info


def main() -> None:
    results: dict = {
        "level": LEVEL,
        "criteria": {
            "overall": f"coverage of {LEVEL:.0%} intervals in [{OVERALL_BAND[0]}, "
            f"{OVERALL_BAND[1]}]",
            "bins": f"in/out-of-domain bins within ±{BIN_TOLERANCE} of {LEVEL} when n >= "
            f"{BIN_MIN} (pass: null = fewer molecules, not checked)",
        },
        "naive_z": NormalDist().inv_cdf(0.5 + LEVEL / 2),
        "scaffold_test": {},
        "external": {},
    }
    for name in REGRESSION:
        directory = PRETRAINED / name
        predictor = Predictor.from_pretrained(directory)
        cal = Calibration.load(directory)
        assert cal is not None, f"{name} is not calibrated: run the calibrate stage first"
        val, test = split_sets(RECIPES[name], directory)
        entry = score(name, predictor, cal, test, val)
        entry["calibration"] = {
            "n": cal.n,
            "fitted_on": cal.fitted_on,
            "bins": {
                t: c.serving_bins()
                for t, c in cal.targets.items()
                if isinstance(c, ConformalTarget)
            },
        }
        results["scaffold_test"][name] = entry
        print(name, json.dumps(entry["checks"]))
    ext, info = external_qm9(PRETRAINED / "homo_lumo_gap")
    predictor = Predictor.from_pretrained(PRETRAINED / "homo_lumo_gap")
    gap_val, _ = split_sets(RECIPES["homo_lumo_gap"], PRETRAINED / "homo_lumo_gap")
    entry = score(
        "homo_lumo_gap", predictor, Calibration.load(PRETRAINED / "homo_lumo_gap"), ext, gap_val
    )
    results["external"]["homo_lumo_gap"] = {"set": info, **entry}
    print("external homo_lumo_gap", json.dumps(entry["checks"]))
    results["external"]["none_for"] = {
        "solubility": "ESOL.csv.gz holds the same 1,128 measurements as the training table",
        "lipophilicity": "Lipophilicity.csv.gz holds the same 4,200 measurements",
        "hydration_free_energy": "FreeSolv.csv.gz holds the same 642 values",
    }
    bbb = PRETRAINED / "bbb_penetration"
    _, test = split_sets(RECIPES["bbb_penetration"], bbb)
    results["classification"] = {
        "bbb_penetration": measure(Calibration.load(bbb), Predictor.from_pretrained(bbb), test)
    }
    OUT_JSON.write_text(json.dumps(results, indent=2))
    OUT_MD.write_text(markdown(results))
    print(f"wrote {OUT_JSON} and {OUT_MD}")


def _mark(ok) -> str:
    return "—" if ok is None else ("pass" if ok else "**miss**")


def why(results: dict) -> str:
    """The paragraph on the misses, with the RMSE ratios of the sets."""
    ratio = {n: e["rmse"] / e["rmse_validation"] for n, e in results["scaffold_test"].items()}
    ext = results["external"]["homo_lumo_gap"]
    shift = ", ".join(f"{n} {r:.2f}" for n, r in ratio.items())
    return (
        "Why the validation-split calibration misses: split-conformal coverage is guaranteed "
        "for molecules exchangeable with the calibration (validation) molecules. A scaffold split puts other scaffolds in the "
        "test part than in the validation part, and on the small sets they differ in "
        f"difficulty: test RMSE / validation RMSE = {shift}. Where the test part is harder "
        "(solubility, lipophilicity) the intervals cover too little, where it is easier "
        "(hydration free energy) too much; where both are alike (HOMO-LUMO gap, 726 "
        "validation molecules) coverage is on target. The external QM9 sample is much harder "
        f"for the model (RMSE {ext['rmse']:.3f} eV against {ext['rmse_validation']:.3f} on "
        "validation); the std-normalised intervals widen with it and still cover "
        f"{ext['levels']['0.9']['coverage']:.1%}. The plain conformal baseline (validation "
        "split) misses in the same places; the naive ensemble interval is far off everywhere."
    )


def _cov(b: dict | None) -> str:
    return f"{b['coverage']:.1%} ({b['n']})" if b else "?"


def cv_summary(results: dict) -> str:
    """One paragraph: per model, validation-split (shipped) -> cross-validated coverage."""
    parts = []
    for name, e in results["scaffold_test"].items():
        cv = e.get("cv_calibration")
        if cv is None:
            reason = NOT_RECALIBRATED.get(name, "not measured")
            parts.append(f"{name}: not measured ({reason})")
            continue
        verdict = "pass" if cv["checks"]["overall"]["pass"] else "miss"
        parts.append(
            f"{name}: {e['levels']['0.9']['coverage']:.1%} → {cv['0.9']['coverage']:.1%} "
            f"({verdict}; calibration molecules {e['calibration']['n']} → {cv['n']}; mean "
            f"width {e['levels']['0.9']['mean_width']:.3f} → {cv['0.9']['mean_width']:.3f})"
        )
    text = (
        "Coverage of the 90 % intervals on the scaffold test split, validation-split "
        "(shipped) → cross-validated calibration: " + "; ".join(parts) + "."
    )
    rmse = {
        n: (e["rmse"], e["rmse_validation"], e["cv_calibration"]["rmse_calibration_set"])
        for n, e in results["scaffold_test"].items()
        if e.get("cv_calibration") is not None
    }
    if rmse:
        ratios = "; ".join(
            f"{n}: test {t:.3f}, validation {v:.3f}, out of fold {o:.3f}"
            for n, (t, v, o) in rmse.items()
        )
        text += (
            " Cross-validation fixed the coverage of neither model and moved both further "
            "from 90 %. It gives 3–4× more calibration molecules, but coverage follows how "
            "hard the calibration molecules are for the model compared with the test "
            f"molecules, and cross-validation does not change that in the right direction "
            f"(RMSE, {ratios}): ESOL's test scaffolds stay harder than both its validation and "
            "its out-of-fold molecules, so the intervals still cover too little; FreeSolv's "
            "small scaffold sets in train + validation are much harder out of fold than its "
            "test molecules (a few residuals of 7–10 kcal/mol), so the intervals got about "
            "twice as wide and cover even more. Also measured (`python -m benchmarks."
            "calibration_domain_variant`, `benchmarks/results/calibration_domain_variant.json`): "
            "the same cross-validation with the shipped model's own domain flags for the "
            "out-of-fold molecules gives solubility 77.2 % and hydration free energy 95.4 % "
            "(both misses). **Shipped: the validation-split calibration, for every model.** "
            "Cross-validation was chosen as the fix before its test numbers existed and was "
            "shipped for these two models at first; it was then taken back for reasons that "
            "do not need the test set: the issue specifies calibration on the validation split, "
            "the other two regression models cannot be cross-validated in the CPU budget (one "
            "method for every shipped model), and it adds ~45 min of 1-thread CPU to `make "
            "pretrained`. Both sets of test numbers are published here, so the choice adds no "
            "optimism to the reported coverage. `molprop train --calibration cv`, `molprop "
            "calibrate --cv-data` and `--stage calibrate-cv` stay available."
        )
    return text


def cv_table(results: dict) -> list[str]:
    """Per regression model: the shipped validation-split calibration against the measured
    cross-validated one (out-of-fold predictions of train + validation), on the scaffold test
    split."""
    lines = [
        "| model | calibration | fitted on | calibration n | coverage 90 % | mean width "
        "| in domain (n) | out of domain (n) | overall | in | out | RMSE calibration set |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in results["scaffold_test"].items():
        cal = e["calibration"]
        rows = [("shipped", cal["fitted_on"], cal["n"], e["levels"]["0.9"], e["checks"],
                 e["rmse_calibration_set"])]  # fmt: skip
        cv = e.get("cv_calibration")
        if cv is not None:
            rows.append(("CV (measured, not shipped)", cv["fitted_on"], cv["n"], cv["0.9"],
                         cv["checks"], cv["rmse_calibration_set"]))  # fmt: skip
        for label, fitted, n, r, checks_, rmse in rows:
            fitted = fitted.split(" (")[0]  # the CV text's note on the kept scaffold sets: above
            bins = r.get("bins", {})
            lines.append(
                f"| {name} | {label} | {fitted} | {n} | {r['coverage']:.1%} | "
                f"{r['mean_width']:.3f} | {_cov(bins.get('in_domain'))} | "
                f"{_cov(bins.get('out_of_domain'))} | {_mark(checks_['overall']['pass'])} | "
                f"{_mark(checks_.get('in_domain', {}).get('pass'))} | "
                f"{_mark(checks_.get('out_of_domain', {}).get('pass'))} | {rmse:.3f} |"
            )
    return lines


def markdown(results: dict) -> str:
    lines = [
        "# Calibrated intervals of the shipped models",
        "",
        "Produced by `python -m benchmarks.calibration` (numbers: "
        "`benchmarks/results/calibration.json`). Each regression model's intervals "
        "(`pretrained/<name>/calibration.json`; normalised split-conformal, Mondrian bins by "
        "applicability domain and std tercile, see `molprop/artifact/calibration.py`) are "
        "calibrated on its validation split (`python -m molprop.pretrained_recipes --stage "
        "calibrate`) and scored here on its scaffold test split and, for the HOMO-LUMO gap, on "
        "an external QM9 sample; the cross-validated alternative (5-fold scaffold CV of train "
        "+ validation, `--stage calibrate-cv`, `molprop/training/cv_calibrate.py`; its "
        "calibration files are kept in `benchmarks/results/calibration_cv/`) was measured for "
        "two of them and is not shipped. Criteria: "
        "coverage of the 90 % intervals in 87–93 % overall; in-domain and out-of-domain bins "
        "within ±5 % of 90 % where they have ≥ 30 molecules (— : fewer, not checked). Nothing "
        "was tuned on these sets.",
        "",
        "## Cross-validated calibration (measured) against the validation-split calibration (shipped)",
        "",
        "The validation split alone is small (64–726 molecules) and, under a scaffold split, "
        "as easy or hard as its few scaffolds happen to be. Cross-validated calibration "
        "(`molprop/training/cv_calibrate.py`) instead predicts train + validation (never test) "
        "out of fold: 5 scaffold-grouped folds; per fold an ensemble trained with exactly the "
        "shipped recipe (same ModelConfig, TrainConfig, 3 members, seeds 0–2, 1 torch thread) "
        "on the other folds, early-stopping on a 1/9 scaffold hold-out of them, predicts the "
        "held-out fold. The weights are unchanged (sha256 checked); only "
        "`calibration.json` (same crepes Mondrian bins and offset rule) is refitted on the "
        "out-of-fold residuals and ensemble stds. Two choices, made before any test number: "
        "(1) scaffold sets larger than 1/18 of train + validation (ESOL: the acyclic and benzene "
        "sets, 571 molecules; FreeSolv: 472) stay in every fold's training and are not "
        "calibration points, because the scaffold split that made the test part sends exactly "
        "these sets to training first, so no test molecule comes from one; (2) a molecule's "
        "`in_domain` flag is that of the fold model that predicted it (the same domain criterion "
        "over the fold's training molecules) — the shipped model's own domain would call every "
        "training molecule in domain, each being its own nearest neighbour.",
        "",
        *cv_table(results),
        "",
        cv_summary(results),
        "",
        "## All sets (the shipped calibrations)",
        "",
        "| model | set | n | coverage 90 % | mean width | in domain (n) | out of domain (n) "
        "| overall | in | out | RMSE set / calibration set | naive mean ± 1.645 std | "
        "plain conformal (validation) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [(n, "scaffold test", e) for n, e in results["scaffold_test"].items()]
    ext = results["external"]["homo_lumo_gap"]
    rows.append(("homo_lumo_gap", f"external: micro QM9 ({ext['set']['used']})", ext))
    for name, label, e in rows:
        r, c = e["levels"]["0.9"], e["checks"]
        bins = r.get("bins", {})
        naive = e.get("naive_ensemble_0.9", {})
        plain = e.get("plain_conformal_0.9")

        lines.append(
            f"| {name} | {label} | {r['n']} | {r['coverage']:.1%} | {r['mean_width']:.3f} | "
            f"{_cov(bins.get('in_domain'))} | {_cov(bins.get('out_of_domain'))} | "
            f"{_mark(c['overall']['pass'])} | {_mark(c.get('in_domain', {}).get('pass'))} | "
            f"{_mark(c.get('out_of_domain', {}).get('pass'))} | "
            f"{e['rmse']:.3f} / {e.get('rmse_calibration_set', float('nan')):.3f} | "
            f"{naive.get('coverage', float('nan')):.1%} / {naive.get('mean_width', float('nan')):.3f} | "
            + (f"{plain['coverage']:.1%} / {plain['mean_width']:.3f} |" if plain else "— |")
        )
    cls = results["classification"]["bbb_penetration"]["p_np"]
    lines += [
        "",
        "Widths are in the target's unit (log10(mol/L), logD, kcal/mol, eV). Naive: the ensemble "
        "std read as a Gaussian sigma; plain conformal: pooled split-conformal on |residual| "
        "(no std, no bins) fitted on the same validation split — both for context only.",
        "",
        why(results),
        "",
        "External sets: only the HOMO-LUMO gap has one in the repository "
        f"({ext['set']['source']}; {ext['set']['removed_in_training_part']} molecules that are "
        "in the model's QM9 part removed). The other shipped tables of solubility, "
        "lipophilicity and hydration free energy hold the same measurements as the training "
        "tables, so they are not external.",
        "",
        "## Classification (BBBP, Platt scaling fitted on the validation split)",
        "",
        f"Scaffold test split, {cls['n']} molecules: ECE {cls['ece_uncalibrated']:.3f} "
        f"uncalibrated → {cls['ece']:.3f} calibrated; Brier {cls['brier_uncalibrated']:.4f} → "
        f"{cls['brier']:.4f} (ECE: 10 equal-width bins). "
        + (
            "The ensemble was already close to calibrated; on this test split Platt scaling "
            "does not improve it (the differences are within the noise of 205 molecules)."
            if cls["ece"] >= cls["ece_uncalibrated"]
            else "Platt scaling lowers the test ECE."
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
