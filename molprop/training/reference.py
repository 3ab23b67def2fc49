"""Fit a model's percentile reference: its predictions over a reference set of molecules (the
shipped approved-drug set by default), stored in the artifact (:mod:`molprop.artifact.reference`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from molprop.artifact.reference import Reference
from molprop.inference.predictor import Predictor

#: approved drugs: ClinTox FDA-approved, standardised, one per InChIKey (data/admet/SOURCES.md)
APPROVED_DRUGS = Path(__file__).resolve().parents[2] / "data" / "admet" / "approved_drugs.csv.gz"


def fit_reference(
    model: str | Path,
    smiles_file: str | Path = APPROVED_DRUGS,
    name: str = "",
    smiles_column: str = "smiles",
) -> Reference:
    """Predict every molecule of ``smiles_file`` with ``model`` (a directory), store the
    per-target quantiles as the model's ``reference.json`` and return them."""
    path = Path(smiles_file)
    smiles = pd.read_csv(path, dtype=str, keep_default_na=False)[smiles_column].tolist()
    predictor = Predictor.from_pretrained(model)
    out = predictor.predict(smiles, interval=None)
    ok = out["status"] == "ok"
    label = name or f"{path.name} ({len(smiles)} molecules)"
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    reference = Reference.fit(
        label, sha, {t: out.loc[ok, t].to_numpy() for t in predictor.target_names}
    )
    predictor.artifact.write_reference(reference)
    return reference
