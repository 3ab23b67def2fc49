"""Derive (smiles, low, high) tables from the multi-fidelity files shipped in ``data/``.

- QM8 (``data/multifidelity/qm8.csv.gz``): first singlet excitation energy E1, stored in
  Hartree; low = ``E1-PBE0`` (TDDFT), high = ``E1-CC2``; both converted to eV.
- G4MP2 ionisation potentials (``data/multifidelity/g4mp2_ip_3405.csv.gz``, Dandu et al.
  2022): no SMILES column, only xyz geometries. SMILES are derived from the neutral geometry
  with RDKit's ``rdDetermineBonds`` (charge 0; extended-Hueckel bond orders as a fallback when
  the default connectivity/bond-order assignment fails); rows where both fail are reported. The
  adiabatic ionisation potential is ``IP = (u0_oxidized - u0) * 27.211386`` eV (0 K energies
  incl. ZPE, Hartree): low = B3LYP (``u0_oxidized_b3lyp - u0_b3lyp``), high = G4MP2
  (``u0_oxidized_g4mp2 - u0_g4mp2``).

Run ``python -m molprop.transfer.datasets --out DIR`` to write both CSVs.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
import pandas as pd
from rdkit import Chem
from rdkit.Chem import rdDetermineBonds

from molprop.errors import DataError
from molprop.io.table import RowIssue

log = logging.getLogger(__name__)

HARTREE_EV = 27.211386
REPO_DATA = Path(__file__).resolve().parents[2] / "data" / "multifidelity"


def xyz_to_smiles(xyz: str, charge: int = 0) -> str:
    """Canonical SMILES (no explicit H) of an xyz block ``N / comment / symbol x y z``."""
    lines = [ln for ln in str(xyz).strip().splitlines()]
    n = int(lines[0].strip())
    atoms = lines[2 : 2 + n]
    if len(atoms) != n:
        raise DataError(f"xyz block declares {n} atoms but has {len(atoms)} coordinate lines")
    block = "\n".join([str(n), "", *atoms])
    mol = Chem.MolFromXYZBlock(block)
    if mol is None:
        raise DataError("RDKit could not read the xyz block")
    try:
        rdDetermineBonds.DetermineBonds(mol, charge=charge)
    except Exception:  # van der Waals bond orders failed: retry with extended Hueckel
        mol = Chem.MolFromXYZBlock(block)
        rdDetermineBonds.DetermineBonds(mol, charge=charge, useHueckel=True)
    mol = Chem.RemoveHs(mol)
    smiles = Chem.MolToSmiles(mol)
    if not smiles or Chem.MolFromSmiles(smiles) is None:
        raise DataError("bond perception produced an unparsable molecule")
    return smiles


def g4mp2_ip_frame(path: str | Path | None = None) -> tuple[pd.DataFrame, list[RowIssue]]:
    """-> (frame with ``id, smiles, ip_b3lyp, ip_g4mp2`` in eV, rows whose SMILES failed)."""
    raw = pd.read_csv(path or REPO_DATA / "g4mp2_ip_3405.csv.gz")
    need = ["filename", "xyz", "u0_b3lyp", "u0_oxidized_b3lyp", "u0_g4mp2", "u0_oxidized_g4mp2"]
    missing = [c for c in need if c not in raw.columns]
    if missing:
        raise DataError(f"G4MP2 file lacks columns {missing}")
    smiles: list[str | None] = []
    issues: list[RowIssue] = []
    for i, xyz in enumerate(raw["xyz"].tolist()):
        try:
            smiles.append(xyz_to_smiles(xyz))
        except Exception as exc:  # RDKit raises several types; each failure is reported
            smiles.append(None)
            issues.append(RowIssue(i, str(raw["filename"].iloc[i]), f"SMILES from xyz: {exc}"))
    frame = pd.DataFrame(
        {
            "id": raw["filename"],
            "smiles": smiles,
            "ip_b3lyp": (raw["u0_oxidized_b3lyp"] - raw["u0_b3lyp"]) * HARTREE_EV,
            "ip_g4mp2": (raw["u0_oxidized_g4mp2"] - raw["u0_g4mp2"]) * HARTREE_EV,
        }
    )
    for issue in issues:
        log.warning("G4MP2 %s", issue.describe())
    return frame[frame["smiles"].notna()].reset_index(drop=True), issues


def qm8_e1_frame(path: str | Path | None = None) -> pd.DataFrame:
    """-> frame with ``smiles, e1_pbe0, e1_cc2`` (first excitation energy, eV)."""
    raw = pd.read_csv(path or REPO_DATA / "qm8.csv.gz")
    for col in ("smiles", "E1-PBE0", "E1-CC2"):
        if col not in raw.columns:
            raise DataError(f"QM8 file lacks column {col!r}")
    return pd.DataFrame(
        {
            "smiles": raw["smiles"],
            "e1_pbe0": raw["E1-PBE0"].astype(float) * HARTREE_EV,
            "e1_cc2": raw["E1-CC2"].astype(float) * HARTREE_EV,
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write g4mp2_ip.csv and qm8_e1.csv (eV)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    g4, issues = g4mp2_ip_frame()
    g4.to_csv(out / "g4mp2_ip.csv", index=False)
    pd.DataFrame(
        [(i.row, i.smiles, i.reason) for i in issues], columns=["row", "id", "reason"]
    ).to_csv(out / "g4mp2_ip_failed.csv", index=False)
    qm8_e1_frame().to_csv(out / "qm8_e1.csv", index=False)
    log.info(
        "G4MP2: %d rows, %d failed SMILES; std ip_g4mp2 %.3f eV",
        len(g4),
        len(issues),
        float(np.std(g4["ip_g4mp2"])),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
