"""Also measured for the calibration study (not shipped): the cross-validated calibration of a
shipped model with the shipped model's *own* applicability domain for the out-of-fold molecules
(``CrossValidation(domain="model")``) instead of each fold model's domain (the shipped choice),
scored on the scaffold test split. Reuses the fold models kept by
``python -m molprop.pretrained_recipes --stage calibrate-cv NAME --work runs/cv/work`` (without
them it retrains them: ~15-35 min per model on 1 CPU thread). Nothing is written to the model.

Usage: python -m benchmarks.calibration_domain_variant solubility hydration_free_energy
(writes benchmarks/results/calibration_domain_variant.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from molprop.pretrained_recipes import PRETRAINED, RECIPES, split_sets
from molprop.training.calibrate import measure
from molprop.training.cv_calibrate import CrossValidation, fit_cross_validated

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "calibration_domain_variant.json"


def main(names: list[str]) -> None:
    out = {}
    for name in names:
        recipe, directory = RECIPES[name], PRETRAINED / name
        trainval, test = split_sets(recipe, directory, ("train+val", "test"))
        cv = CrossValidation(
            work_dir=REPO / "runs" / "cv" / "work" / name, threads=1, domain="model"
        )
        cal, predictor, _ = fit_cross_validated(directory, trainval, cv)
        r = measure(cal, predictor, test, levels=(0.9,))[recipe.target]["levels"]["0.9"]
        out[name] = {
            "domain": "model",
            "calibration_n": cal.n,
            "serving_bins": cal.targets[recipe.target].serving_bins(),
            "test_0.9": r,
        }
        print(name, round(r["coverage"], 4), round(r["mean_width"], 3))
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["solubility", "hydration_free_energy"])
