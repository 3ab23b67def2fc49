"""What every ADMET page shows beside the models: RDKit physicochemical properties, drug-likeness
rules and structural alerts of one molecule.

Computed on the molecule the models read (:func:`molprop.chem.standardize.standardize`: the
largest organic fragment, neutralised; any element allowed); a molecule the standardisation
refuses (metal complexes, inorganic input) is described as written. Every value is invariant
to how the SMILES is written (atom order, aromatic or Kekulé form), alert names are sorted;
values are rounded (weight, cLogP, QED, Fsp3 to 3 decimals, TPSA to 2).

Properties (:data:`PROPERTIES`, with units in :data:`UNITS`): molecular weight (Da), Crippen
cLogP (Wildman & Crippen 1999), TPSA (Å², Ertl 2000, N and O only), Lipinski H-bond donors and
acceptors, rotatable bonds (strict definition), heavy atoms, rings, aromatic rings, fraction of
sp3 carbons, net formal charge, QED (Bickerton et al. 2012), stereocentres (assigned or not) and
unassigned stereocentres. Rules: Lipinski's rule of five (MW ≤ 500, cLogP ≤ 5, HBD ≤ 5,
HBA ≤ 10; passes with at most one violation) and Veber's (rotatable bonds ≤ 10 and TPSA ≤ 140).
Alerts: RDKit's ``FilterCatalog`` PAINS (A, B, C; Baell & Holloway 2010), Brenk (Brenk et al.
2008) and NIH (Jadhav et al. 2010) substructure filters; an alert is a reason to look, not a
verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import pandas as pd
from rdkit import Chem
from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, rdMolDescriptors
from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

from molprop.chem.smiles import parse_smiles
from molprop.chem.standardize import standardize
from molprop.errors import InvalidInputError, UnsupportedMoleculeError

PROPERTIES: tuple[str, ...] = (
    "molecular_weight",
    "clogp",
    "tpsa",
    "hbd",
    "hba",
    "rotatable_bonds",
    "heavy_atoms",
    "rings",
    "aromatic_rings",
    "fraction_csp3",
    "formal_charge",
    "qed",
    "stereocentres",
    "unassigned_stereocentres",
)
UNITS: dict[str, str] = {
    "molecular_weight": "Da",
    "clogp": "log10 (octanol/water)",
    "tpsa": "Å²",
    "qed": "0-1",
    "fraction_csp3": "0-1",
}
RULES: tuple[str, ...] = ("lipinski_violations", "lipinski_pass", "veber_pass")
ALERT_SETS: dict[str, tuple[str, ...]] = {
    "pains": ("PAINS_A", "PAINS_B", "PAINS_C"),
    "brenk": ("BRENK",),
    "nih": ("NIH",),
}
#: output columns after the input's: what was described, then properties, rules and alerts
COLUMNS: tuple[str, ...] = (
    "described_smiles",
    *PROPERTIES,
    *RULES,
    *(f"{name}_alerts" for name in ALERT_SETS),
    "n_alerts",
    "status",
    "error",
)
_ALL_ELEMENTS = frozenset(Chem.GetPeriodicTable().GetElementSymbol(z) for z in range(1, 119)) | {
    "*"
}


@cache
def _catalog(name: str) -> FilterCatalog:
    params = FilterCatalogParams()
    for catalog in ALERT_SETS[name]:
        params.AddCatalog(getattr(FilterCatalogParams.FilterCatalogs, catalog))
    return FilterCatalog(params)


def alerts(mol: Chem.Mol, name: str) -> list[str]:
    """Sorted, distinct descriptions of the ``name`` (pains / brenk / nih) alerts in ``mol``."""
    return sorted({entry.GetDescription() for entry in _catalog(name).GetMatches(mol)})


def describe(mol: Chem.Mol) -> dict[str, object]:
    """Properties, rules and alerts of a sanitised molecule (see the module docstring)."""
    # no CIP labels: only the count and the unassigned ('?') ones are reported, and CIP
    # labelling is ~80 % of this call's time
    centres = Chem.FindMolChiralCenters(
        mol, includeUnassigned=True, includeCIP=False, useLegacyImplementation=False
    )
    row: dict[str, Any] = {
        "molecular_weight": round(Descriptors.MolWt(mol), 3),
        "clogp": round(Crippen.MolLogP(mol), 3),
        "tpsa": round(rdMolDescriptors.CalcTPSA(mol), 2),
        "hbd": Lipinski.NumHDonors(mol),
        "hba": Lipinski.NumHAcceptors(mol),
        "rotatable_bonds": rdMolDescriptors.CalcNumRotatableBonds(
            mol, rdMolDescriptors.NumRotatableBondsOptions.Strict
        ),
        "heavy_atoms": mol.GetNumHeavyAtoms(),
        "rings": rdMolDescriptors.CalcNumRings(mol),
        "aromatic_rings": rdMolDescriptors.CalcNumAromaticRings(mol),
        "fraction_csp3": round(rdMolDescriptors.CalcFractionCSP3(mol), 3),
        "formal_charge": Chem.GetFormalCharge(mol),
        "qed": round(QED.qed(mol), 3),
        "stereocentres": len(centres),
        "unassigned_stereocentres": sum(label == "?" for _, label in centres),
    }
    violations = sum(
        (
            row["molecular_weight"] > 500,
            row["clogp"] > 5,
            row["hbd"] > 5,
            row["hba"] > 10,
        )
    )
    row["lipinski_violations"] = violations
    row["lipinski_pass"] = violations <= 1
    row["veber_pass"] = row["rotatable_bonds"] <= 10 and row["tpsa"] <= 140
    total = 0
    for name in ALERT_SETS:
        found = alerts(mol, name)
        row[f"{name}_alerts"] = "; ".join(found)
        total += len(found)
    row["n_alerts"] = total
    return row


def describe_smiles(smiles: str) -> dict[str, object]:
    """One SMILES -> its row (:data:`COLUMNS`); a SMILES that cannot be read gets status
    ``invalid_input``, the reason in ``error`` and no values (never an exception)."""
    try:
        mol = parse_smiles(smiles)
    except InvalidInputError as exc:
        return {"status": "invalid_input", "error": str(exc)}
    try:
        result = standardize(mol, _ALL_ELEMENTS)
        parent, text = result.mol, result.smiles if result.changed else str(smiles).strip()
    except UnsupportedMoleculeError:  # metal complexes, inorganic input: as written
        parent, text = mol, str(smiles).strip()
    return {"described_smiles": text, **describe(parent), "status": "ok", "error": ""}


def physchem_frame(smiles: Sequence[str]) -> pd.DataFrame:
    """One row per SMILES, in order, with :data:`COLUMNS` (the booleans are nullable: empty
    where the row failed)."""
    frame = pd.DataFrame([describe_smiles(s) for s in smiles], columns=list(COLUMNS))
    for column in ("lipinski_pass", "veber_pass"):
        frame[column] = frame[column].astype("boolean")
    for column in ("hbd", "hba", "rotatable_bonds", "heavy_atoms", "rings", "aromatic_rings"):
        frame[column] = frame[column].astype("Int64")
    for column in ("formal_charge", "stereocentres", "unassigned_stereocentres"):
        frame[column] = frame[column].astype("Int64")
    frame["lipinski_violations"] = frame["lipinski_violations"].astype("Int64")
    frame["n_alerts"] = frame["n_alerts"].astype("Int64")
    return frame


__all__ = [
    "COLUMNS",
    "PROPERTIES",
    "UNITS",
    "alerts",
    "describe",
    "describe_smiles",
    "physchem_frame",
]
