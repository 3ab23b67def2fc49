"""Calibrated intervals of the shipped models: coverage and width on the scaffold
test split of each regression model, per applicability-domain bin; the same on an external set
built from shipped data; ECE / Brier of the BBBP classifier before and after Platt scaling.

Every calibration here is the one stored in ``pretrained/<name>/calibration.json``, fitted on
the validation split (``python -m molprop.pretrained_recipes --stage calibrate``). For
comparison each difficulty rule (``std``; ``std+novelty``, the shipped one) is refitted here on
the same validation split and scored on the same molecules, and the cross-validated
calibrations kept in ``benchmarks/results/calibration_cv`` are scored too. Per set, the sampling
noise of the measured coverage: its Clopper-Pearson 95 % interval and the probability that a
perfectly calibrated method lands in the 87-93 % band on that many molecules. The test and
external molecules are only predicted and scored. Baselines for context, computed on the same
predictions: the naive ensemble interval ``mean ± z·std`` and plain (not normalised, pooled)
split-conformal intervals fitted on the same validation split (crepes).

Checks (the targets): 90 % lies in the 95 % Clopper-Pearson interval of the measured coverage
of the 90 % intervals, overall and in the in-domain and out-of-domain bins where they have >= 30
molecules. Misses are reported as misses.

External set: only one property has an honest one. ``data/qm9/micro_qm9.csv.gz`` (graphium's
1,006-molecule QM9 sample, MoleculeNet format) carries the same HOMO-LUMO gap (B3LYP/6-31G(2df,p),
Hartree -> eV) as the QM9 part the homo_lumo_gap model was trained on; the molecules that are
also in that part (train, validation or test; canonical SMILES) are removed. The other shipped
tables of lipophilicity (Lipophilicity.csv.gz) and hydration free energy (FreeSolv.csv.gz) are
the same measurements as the training tables, and 1,095 of ESOL's 1,117 distinct molecules
(InChIKey) are in AqSolDB, the solubility model's training table, so no external set exists for
them in the repository.

Usage: python -m benchmarks.calibration  (writes benchmarks/results/calibration.json and
docs/results/calibration.md; 1.5 min on 1 thread of a shared 2-core machine);
``--markdown-only`` rewrites the page from the stored JSON
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
from rdkit import Chem, RDLogger

from molprop.artifact.calibration import DIFFICULTIES, Calibration, ConformalTarget
from molprop.artifact.coverage import clopper_pearson
from molprop.inference import Predictor
from molprop.pretrained_recipes import HARTREE_EV, PRETRAINED, RECIPES, load_data, split_sets
from molprop.training.calibrate import fit_on, measure, raw_predictions
from molprop.training.metrics import interval_metrics
from molprop.training.tables import LabelledSet

REPO = Path(__file__).resolve().parents[1]
OUT_JSON = REPO / "benchmarks" / "results" / "calibration.json"
OUT_MD = REPO / "docs" / "results" / "calibration.md"
OUT_PNG = REPO / "docs" / "results" / "calibration_coverage.png"
LEVEL = 0.9
OVERALL_BAND = (0.87, 0.93)
BIN_MIN = 30
REGRESSION = [n for n, r in RECIPES.items() if r.task_type == "regression"]
#: the cross-validated calibrations measured on earlier models (``--stage calibrate-cv``,
#: out-of-fold predictions of train + validation; fold models not kept): kept here so the
#: comparison can be rerun; the shipped models are calibrated on their validation split
CV_CALIBRATIONS = REPO / "benchmarks" / "results" / "calibration_cv"
#: what the page says when the kept CV calibrations were made for models no longer shipped
#: (their fold ensembles were trained with another recipe; see :func:`cv_matches`)
STALE_CV = (
    "Measured on the models shipped before the retrain (dropout 0.1, a 128-wide head, no "
    "weight averaging, patience 12), whose fold ensembles are the ones in "
    "`benchmarks/results/calibration_cv/` (`trained_with.json`). Coverage of the 90 % "
    "intervals on the scaffold test split, validation-split → cross-validated calibration: "
    "solubility 78.9 % → 75.4 % (calibration molecules 112 → 443), hydration free energy "
    "92.3 % → 95.4 % (64 → 105): cross-validation moved both further from 90 %, so the "
    "validation-split calibration was kept. The shipped models have since been retrained with "
    "`molprop train`'s default recipe; out-of-fold residuals of the old "
    "recipe's folds do not calibrate them, so the CV calibrations are not scored here any "
    "more (rerun `python -m molprop.pretrained_recipes --stage calibrate-cv NAME --work DIR` "
    "and copy its `calibration.json` and the model's settings here to measure again)."
)
#: shipped regression models without a measured cross-validated calibration, and why
NOT_RECALIBRATED = {
    "lipophilicity": "5-fold CV = 15 more trainings of 3,360 molecules; the shipped ensemble "
    "took 2,514 s to train, so about 3.5 h of CPU: did not fit the CPU budget",
    "homo_lumo_gap": "5-fold CV = 15 more trainings of 5,815 molecules (shipped ensemble: "
    "1,607 s), about 2.2 h of CPU: did not fit the CPU budget",
    "homo_lumo_gap_3d": "the 3D twin of homo_lumo_gap (same split, same cost); its out-of-fold "
    "molecules would also need their fold's 3D featurisation: not attempted",
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


def sampling_noise(coverage: float, n: int, n_calibration: int | None = None) -> dict:
    """How much of a coverage measured on ``n`` molecules is sampling noise.

    * ``clopper_pearson_95``: exact (Clopper-Pearson) 95 % interval of the true coverage given
      ``round(coverage * n)`` of ``n`` covered;
    * ``p_band_binomial``: probability that a perfectly calibrated 90 % method (each molecule
      covered with probability 0.9, independently: Binomial(n, 0.9)) measures a coverage inside
      the 87-93 % band on ``n`` molecules;
    * ``p_band_conformal``: the same for split-conformal intervals fitted on ``n_calibration``
      exchangeable molecules (pooled, no bins): the test coverage is then Beta-Binomial
      (n, l, n_cal + 1 - l) with l = ceil(0.9 (n_cal + 1)) (Vovk 2012), which adds the
      calibration set's own noise."""
    from scipy.stats import betabinom, binom

    k = int(round(coverage * n))
    ks = np.arange(n + 1)
    band = (ks / n >= OVERALL_BAND[0]) & (ks / n <= OVERALL_BAND[1])
    out = {
        "covered": k,
        "n": n,
        "clopper_pearson_95": list(clopper_pearson(k, n)),
        "p_band_binomial": float(binom.pmf(ks[band], n, LEVEL).sum()),
    }
    if n_calibration:
        rank = int(np.ceil(LEVEL * (n_calibration + 1)))
        pmf = betabinom.pmf(ks[band], n, rank, n_calibration + 1 - rank)
        out["p_band_conformal"] = float(pmf.sum())
        out["n_calibration"] = n_calibration
    return out


def holds(coverage: float, n: int) -> tuple[bool, list[float]]:
    """(the nominal level lies in the 95 % Clopper–Pearson interval of a coverage measured on
    ``n`` molecules, that interval): how a set's coverage is judged."""
    low, high = clopper_pearson(int(round(coverage * n)), n)
    return low <= LEVEL <= high, [low, high]


def checks(report: dict) -> dict:
    """Pass / miss of the criteria for the 90 % intervals of one set: the nominal level in
    the Clopper–Pearson interval of the measured coverage, overall and in each domain bin of
    at least ``BIN_MIN`` molecules; ``in_band``: inside 87-93 % (the former criterion, which
    the novelty ship decision was fixed on)."""
    cov = report["coverage"]
    ok, ci = holds(cov, int(report["n"]))
    out = {"overall": {"coverage": cov, "clopper_pearson_95": ci, "pass": ok,
                       "band": list(OVERALL_BAND),
                       "in_band": OVERALL_BAND[0] <= cov <= OVERALL_BAND[1]}}  # fmt: skip
    for name, b in report.get("bins", {}).items():
        entry = {"coverage": b["coverage"], "n": b["n"]}
        if b["n"] >= BIN_MIN:
            entry["pass"], entry["clopper_pearson_95"] = holds(b["coverage"], int(b["n"]))
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
    r90 = entry["levels"]["0.9"]
    entry["sampling_noise"] = sampling_noise(r90["coverage"], r90["n"], cal.n)
    if val is not None:
        entry["difficulty_variants"] = difficulty_variants(predictor, val, test, raw_test)
        raw_val = raw_predictions(predictor, val)
        entry["plain_conformal_0.9"] = plain_conformal(val, raw_val, raw_test, test)
        kv = raw_val.ok & np.isfinite(val.targets[:, 0])
        entry["rmse_validation"] = float(
            np.sqrt(np.mean((raw_val.mean[kv, 0] - val.targets[kv, 0]) ** 2))
        )
        cv_cal = Calibration.load(CV_CALIBRATIONS / name) if cv_matches(name) else None
        if (CV_CALIBRATIONS / name).is_dir() and cv_cal is None:
            entry["cv_calibration_stale"] = True
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


def cv_matches(name: str) -> bool:
    """True when the fold ensembles of the kept cross-validated calibration of ``name`` were
    trained with the shipped model's recipe (``trained_with.json``: the model and train
    settings, against ``pretrained/<name>/config.json``): out-of-fold residuals of another
    recipe's folds do not calibrate the shipped model."""
    path = CV_CALIBRATIONS / name / "trained_with.json"
    if not path.exists():
        return False
    recorded = json.loads(path.read_text())
    shipped = json.loads((PRETRAINED / name / "config.json").read_text())
    return all(recorded.get(k) == shipped.get(k) for k in ("model", "train"))


def difficulty_variants(predictor: Predictor, val: LabelledSet, test: LabelledSet, raw_test):
    """Each difficulty rule (``std``, ``std+novelty``) refitted on the validation split and
    scored on the same test molecules (the shipped calibration is one of them)."""
    out: dict = {}
    target = predictor.target_names[0]
    keep = raw_test.ok & np.isfinite(test.targets[:, 0])
    if raw_test.novelty is not None:
        raw_val = raw_predictions(predictor, val)
        kv = raw_val.ok & np.isfinite(val.targets[:, 0])
        out["novelty_mean"] = {
            "calibration": float(raw_val.novelty[kv].mean()),
            "set": float(raw_test.novelty[keep].mean()),
        }
    for difficulty in DIFFICULTIES:
        cal = fit_on(predictor, val, difficulty=difficulty)
        got = measure(cal, predictor, test, levels=(LEVEL,), raw=raw_test)[target]
        entry = cal.targets[target]
        assert isinstance(entry, ConformalTarget)
        out[difficulty] = {
            "beta": entry.beta,
            "beta_selection": entry.beta_selection,
            "0.9": got["levels"]["0.9"],
            "checks": checks(got["levels"]["0.9"]),
        }
    return out


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
    if "--markdown-only" in sys.argv[1:]:  # re-render the page from the stored numbers
        results = json.loads(OUT_JSON.read_text())
        OUT_MD.write_text(markdown(results))
        print(f"wrote {OUT_MD} and {plot(results)} from {OUT_JSON}")
        return
    results: dict = {
        "level": LEVEL,
        "criteria": {
            "overall": f"{LEVEL:.0%} lies in the 95 % Clopper-Pearson interval of the "
            "measured coverage of the 90 % intervals",
            "bins": f"the same for the in/out-of-domain bins when n >= {BIN_MIN} (pass: null = "
            "fewer molecules, not checked)",
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
        "solubility": "1,095 of ESOL's 1,117 molecules are in AqSolDB, the training table",
        "lipophilicity": "Lipophilicity.csv.gz holds the same 4,200 measurements",
        "hydration_free_energy": "FreeSolv.csv.gz holds the same 642 values",
    }
    bbb = PRETRAINED / "bbb_penetration"
    _, test = split_sets(RECIPES["bbb_penetration"], bbb)
    results["classification"] = {
        "bbb_penetration": measure(Calibration.load(bbb), Predictor.from_pretrained(bbb), test)
    }
    results["novelty_decision"] = ship_decision(results)
    print("novelty decision", json.dumps(results["novelty_decision"]))
    OUT_JSON.write_text(json.dumps(results, indent=2))
    OUT_MD.write_text(markdown(results))
    print(f"wrote {OUT_JSON}, {OUT_MD} and {plot(results)}")


def _mark(ok) -> str:
    return "—" if ok is None else ("pass" if ok else "**miss**")


def why(results: dict) -> str:
    """The paragraph on the misses, with the RMSE ratios of the sets."""
    ratio = {n: e["rmse"] / e["rmse_validation"] for n, e in results["scaffold_test"].items()}
    ext = results["external"]["homo_lumo_gap"]
    shift = ", ".join(f"{n} {r:.2f}" for n, r in ratio.items())
    fs = results["scaffold_test"]["hydration_free_energy"]["difficulty_variants"]
    under = [
        f"{n}, {ratio[n]:.2f}"
        for n, e in results["scaffold_test"].items()
        if not e["checks"]["overall"]["pass"] and e["levels"]["0.9"]["coverage"] < LEVEL
    ]
    out_missed = [
        f"{name} ({label}) {e['checks']['out_of_domain']['coverage']:.1%} of "
        f"{e['checks']['out_of_domain']['n']}"
        for name, label, e in _sets(results)
        if e["checks"].get("out_of_domain", {}).get("pass") is False
    ]
    return (
        "Why the validation-split calibration misses: split-conformal coverage is guaranteed "
        "for molecules exchangeable with the calibration (validation) molecules. A scaffold split puts other scaffolds in the "
        "test part than in the validation part, and on the small sets they differ in "
        f"difficulty: test RMSE / validation RMSE = {shift}. Where the test part is much "
        f"harder ({', '.join(under) or 'none'}) the intervals cover too little (significantly below 90 %), "
        f"where it is easier (hydration free energy) more "
        f"({fs['std']['0.9']['coverage']:.1%} with the std "
        f"difficulty, {fs['std+novelty']['0.9']['coverage']:.1%} with the novelty scale, see "
        "above); where both are alike coverage is on target. The external QM9 sample is much "
        f"harder for the model (RMSE {ext['rmse']:.3f} eV against {ext['rmse_validation']:.3f} "
        "on validation); the std-normalised intervals widen with it and cover "
        f"{ext['levels']['0.9']['coverage']:.1%}. Out-of-domain bins that miss (≥ 30 "
        f"molecules): {', '.join(out_missed) or 'none'}: molecules far from the training set "
        "are harder there than their ensemble std says, and the validation split (β chosen "
        "there) did not show it. The plain conformal baseline (validation split) misses in "
        "the same places; the naive ensemble interval is far off everywhere."
    )


def _cov(b: dict | None) -> str:
    return f"{b['coverage']:.1%} ({b['n']})" if b else "?"


def cv_summary(results: dict) -> str:
    """One paragraph: per model, validation-split (shipped) -> cross-validated coverage."""
    parts = []
    if any(e.get("cv_calibration_stale") for e in results["scaffold_test"].values()):
        return STALE_CV
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
            "twice as wide and cover even more. **Shipped: the validation-split calibration, for every model.** "
            "Cross-validation was chosen as the fix before its test numbers existed and was "
            "shipped for these two models at first; it was then taken back for reasons that "
            "do not need the test set: the specification asks for calibration on the "
            "validation split, the other two regression models cannot be cross-validated in "
            "the CPU budget (one method for every shipped model), and it adds ~45 min of "
            "1-thread CPU to `make "
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


def _sets(results: dict) -> list[tuple[str, str, dict]]:
    rows = [(n, "scaffold test", e) for n, e in results["scaffold_test"].items()]
    ext = results["external"]["homo_lumo_gap"]
    rows.append(("homo_lumo_gap", f"external: micro QM9 ({ext['set']['used']})", ext))
    return rows


def ship_decision(results: dict) -> dict:
    """The criterion fixed before measuring (commit 036c05c): over every set, the mean
    |coverage - 90 %| of std+novelty must not exceed that of std, and no set inside the
    87-93 % band under std may leave it."""
    dev = {d: [] for d in DIFFICULTIES}
    left = []
    for name, label, e in _sets(results):
        v = e["difficulty_variants"]
        for d in DIFFICULTIES:
            dev[d].append(abs(v[d]["0.9"]["coverage"] - LEVEL))
        if (
            v["std"]["checks"]["overall"]["in_band"]
            and not v["std+novelty"]["checks"]["overall"]["in_band"]
        ):
            left.append(f"{name} ({label})")
    mean = {d: float(np.mean(x)) for d, x in dev.items()}
    ok = mean["std+novelty"] <= mean["std"] and not left
    return {"mean_abs_deviation": mean, "left_band": left, "ship_std+novelty": ok}


def novelty_section(results: dict) -> list[str]:
    decision = results.get("novelty_decision") or ship_decision(results)
    lines = [
        "Difficulty `std+novelty` (`molprop/artifact/calibration.py`, calibration format "
        "version 2): sigma = (std + offset) × (1 + β · novelty), novelty = 1 − max Tanimoto "
        "similarity (Morgan r2, 2048 bits) to the model's training set, from the artifact's "
        "domain file; the same Mondrian bins. β is chosen on the validation split alone: grid "
        "0–8, 5-fold cross-validation inside the validation split (10 repeats), the β whose "
        "held-out 90 % intervals cover the validation split's three novelty terciles most evenly "
        "(mean |tercile coverage − 90 %|; the smallest β within 0.01 of the best). The rule and "
        "the ship criterion below were committed (036c05c) before any test or external number "
        "of this method existed; both columns are refitted on the same validation split and "
        "scored on the same molecules.",
        "",
        "| model | set | n | mean novelty validation / set | std: coverage 90 % / width | "
        "β | std+novelty: coverage 90 % / width | in domain (n) | out of domain (n) | overall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, label, e in _sets(results):
        v = e["difficulty_variants"]
        a, b = v["std"]["0.9"], v["std+novelty"]["0.9"]
        nov = v.get("novelty_mean")
        nov_text = f"{nov['calibration']:.3f} / {nov['set']:.3f}" if nov else "—"
        bins = b.get("bins", {})
        lines.append(
            f"| {name} | {label} | {b['n']} | {nov_text} | {a['coverage']:.1%} / "
            f"{a['mean_width']:.3f} | {v['std+novelty']['beta']:g} | {b['coverage']:.1%} / "
            f"{b['mean_width']:.3f} | {_cov(bins.get('in_domain'))} | "
            f"{_cov(bins.get('out_of_domain'))} | "
            f"{_mark(v['std+novelty']['checks']['overall']['pass'])} |"
        )
    mean = decision["mean_abs_deviation"]
    lines += [
        "",
        f"Ship criterion: mean |coverage − 90 %| over the {len(_sets(results))} sets "
        f"{mean['std']:.4f} (std) → {mean['std+novelty']:.4f} (std+novelty), and no set inside "
        "87–93 % may leave it ("
        + (", ".join(decision["left_band"]) or "none did")
        + "): "
        + (
            "**met, std+novelty is shipped** (the default of `molprop train`, fine-tuning and "
            "`molprop calibrate`; `--difficulty std` keeps the old rule)."
            if decision["ship_std+novelty"]
            else "**not met, std stays the default**; std+novelty is an option "
            "(`molprop calibrate --difficulty std+novelty`)."
        ),
        "",
        what_changed(results),
    ]
    return lines


def what_changed(results: dict) -> str:
    """The paragraph under the novelty table: where beta is 0, what the one beta > 0 moved."""
    models = _sets(results)[:-1]
    zero = [n for n, _, e in models if e["difficulty_variants"]["std+novelty"]["beta"] == 0]
    parts, moved = [], 0
    for name, _, e in models:
        v = e["difficulty_variants"]
        if v["std+novelty"]["beta"] == 0:
            continue
        a, b = v["std"]["0.9"], v["std+novelty"]["0.9"]
        ka, kb = round(a["coverage"] * a["n"]), round(b["coverage"] * b["n"])
        moved = max(moved, abs(kb - ka))
        parts.append(
            f"{name} (β = {v['std+novelty']['beta']:g}: {ka} → {kb} of {b['n']} test "
            f"molecules covered, {a['coverage']:.1%} → {b['coverage']:.1%}; mean width "
            f"{a['mean_width']:.3f} → {b['mean_width']:.3f})"
        )
    nov = {n: e["difficulty_variants"].get("novelty_mean") for n, _, e in models}
    missed = [n for n, _, e in models if not e["checks"]["overall"]["pass"]]
    shift = ", ".join(
        f"{n} {x['calibration']:.3f} → {x['set']:.3f}" for n, x in nov.items() if x is not None
    )
    return (
        "What it changes: the validation splits chose β = 0 for "
        + ", ".join(zero)
        + " (inside those validation splits no β evened out the held-out coverage of the "
        "three novelty terciles by more than the 0.01 tolerance: the more novel molecules are "
        "hardly worse predicted there than the std and the domain bins already say; the "
        "per-β scores are in `benchmarks/results/calibration.json`), so their intervals are "
        "exactly the std ones. Only "
        + ("; ".join(parts) or "none")
        + " got a novelty scale"
        + (
            ", and its change is a single molecule, well inside the sampling noise below; the "
            "ship criterion was met by that molecule"
            if moved == 1
            else f" (at most {moved} molecules moved)"
        )
        + f". Mean novelty, validation → test: {shift}."
        + (
            f" Where the overall coverage misses ({', '.join(missed)}), a rule fitted on the "
            "validation split cannot widen for novelty that does not predict error there: the "
            "under-coverage is a shift in difficulty that neither the ensemble std nor the "
            "similarity to the training set sees. The main point is delivered (the "
            "difficulty knows the applicability domain and is stored in the artifact); it does "
            "not fix the coverage target there."
            if missed
            else ""
        )
    )


def plot(results: dict, path: Path = OUT_PNG) -> Path:
    """Per set: measured 90 % coverage (std and std+novelty) with its Clopper-Pearson 95 %
    interval, the 87-93 % band, and the central 95 % range a perfectly calibrated method
    (Binomial(n, 0.9)) would measure on that many molecules."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import binom

    sets = _sets(results)
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.axhspan(OVERALL_BAND[0], OVERALL_BAND[1], color="tab:green", alpha=0.12,
               label="87–93 % (former target)")  # fmt: skip
    ax.axhline(LEVEL, color="tab:green", lw=0.8)
    for i, (_, _, e) in enumerate(sets):
        n = e["levels"]["0.9"]["n"]
        lo, hi = binom.ppf([0.025, 0.975], n, LEVEL) / n
        ax.plot([i - 0.3, i - 0.3], [lo, hi], color="grey", lw=6, alpha=0.5,
                label="perfect 90 % method, 95 % range" if i == 0 else None)  # fmt: skip
        for k, (difficulty, colour) in enumerate((("std", "tab:blue"),
                                                  ("std+novelty", "tab:orange"))):  # fmt: skip
            cov = e["difficulty_variants"][difficulty]["0.9"]["coverage"]
            low, high = clopper_pearson(int(round(cov * n)), n)
            x = i - 0.05 + 0.2 * k
            ax.errorbar(x, cov, yerr=[[cov - low], [high - cov]], fmt="o", color=colour,
                        capsize=3, label=f"measured, {difficulty}" if i == 0 else None)  # fmt: skip
    labels = [f"{name}\n{'external' if 'external' in lbl else 'scaffold test'} "
              f"(n={e['levels']['0.9']['n']})" for name, lbl, e in sets]  # fmt: skip
    ax.set_xticks(range(len(sets)), labels, fontsize=7)
    ax.set_ylabel("coverage of 90 % intervals")
    ax.set_ylim(0.65, 1.0)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Measured coverage (Clopper–Pearson 95 %) against what chance allows", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def noise_section(results: dict) -> list[str]:
    lines = [
        "How far a measured coverage may sit from the truth on n molecules: the exact "
        "(Clopper–Pearson) 95 % interval of the true coverage given the measured one, and the "
        "probability that a *perfectly* calibrated 90 % method measures a coverage inside "
        "87–93 % on n molecules — (a) each molecule covered independently with probability "
        "0.9 (Binomial(n, 0.9)); (b) split-conformal intervals fitted on the model's n_cal "
        "exchangeable calibration molecules, where the calibration set adds its own noise "
        "(Beta-Binomial(n, l, n_cal + 1 − l), l = ⌈0.9 (n_cal + 1)⌉; pooled, bins ignored).",
        "",
        "![coverage per set](calibration_coverage.png)",
        "",
        "| model | set | n | coverage 90 % (shipped) | Clopper–Pearson 95 % | n_cal | "
        "P(87–93 %), Binomial | P(87–93 %), split-conformal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, label, e in _sets(results):
        sn = e["sampling_noise"]
        lo, hi = sn["clopper_pearson_95"]
        lines.append(
            f"| {name} | {label} | {sn['n']} | {e['levels']['0.9']['coverage']:.1%} | "
            f"{lo:.1%}–{hi:.1%} | {sn.get('n_calibration', '—')} | "
            f"{sn['p_band_binomial']:.2f} | {sn.get('p_band_conformal', float('nan')):.2f} |"
        )
    small = min(_sets(results), key=lambda s: s[2]["sampling_noise"]["n"])
    sn = small[2]["sampling_noise"]
    lines += [
        "",
        "Read: on the small sets the 87–93 % band is narrower than the noise. A perfectly "
        "calibrated method lands in it with the probability in the last two columns (e.g. "
        f"{small[0]}, n = {sn['n']}: {sn['p_band_binomial']:.2f} by the binomial alone, "
        f"{sn.get('p_band_conformal', float('nan')):.2f} once its "
        f"{sn.get('n_calibration', '—')} calibration molecules' noise is added), so that "
        "former target could not be met reliably there whatever the method. A set is judged "
        "instead by whether its Clopper–Pearson interval contains 90 %; it excludes it for: "
        + (
            ", ".join(
                f"{n} ({lbl})"
                for n, lbl, e in _sets(results)
                if not (
                    e["sampling_noise"]["clopper_pearson_95"][0]
                    <= LEVEL
                    <= e["sampling_noise"]["clopper_pearson_95"][1]
                )
            )
            or "none"
        )
        + ".",
    ]
    return lines


def markdown(results: dict) -> str:
    lines = [
        "# Calibrated intervals of the shipped models",
        "",
        "Produced by `python -m benchmarks.calibration` (numbers: "
        "`benchmarks/results/calibration.json`). Each regression model's intervals "
        "(`pretrained/<name>/calibration.json`; normalised split-conformal, difficulty "
        "ensemble std × (1 + β · novelty), Mondrian bins by applicability domain and std "
        "tercile, see `molprop/artifact/calibration.py`) are "
        "calibrated on its validation split (`python -m molprop.pretrained_recipes --stage "
        "calibrate`) and scored here on its scaffold test split and, for the HOMO-LUMO gap, on "
        "an external QM9 sample; the cross-validated alternative (5-fold scaffold CV of train "
        "+ validation, `--stage calibrate-cv`, `molprop/training/cv_calibrate.py`; its "
        "calibration files are kept in `benchmarks/results/calibration_cv/`) was measured for "
        "two of them and is not shipped. Criteria: "
        "the nominal 90 % lies in the 95 % Clopper–Pearson interval of the measured coverage, "
        "overall and in the in-domain and out-of-domain bins where they have ≥ 30 molecules "
        "(— : fewer, not checked); the former criterion, 87–93 % overall, is what the "
        "novelty ship decision below was fixed on. Nothing was tuned on these sets.",
        "",
        "## Novelty-scaled difficulty (shipped) against the std difficulty",
        "",
        *novelty_section(results),
        "",
        "## Sampling noise of the measured coverages",
        "",
        *noise_section(results),
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
    (cls,) = results["classification"]["bbb_penetration"].values()  # its one target
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
            "does not improve it (the differences are within the noise of "
            f"{cls['n']} molecules)."
            if cls["ece"] >= cls["ece_uncalibrated"]
            else "Platt scaling lowers the test ECE."
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
