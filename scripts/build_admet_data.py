"""Build the ADMET training tables under data/admet/ from the raw public files.

Usage::

    python scripts/build_admet_data.py --raw DIR [--out data/admet]

``DIR`` holds the raw files named as in :data:`RAW` (each is one file of a public GitHub
repository at a fixed commit, or of the admet-ai wheel; SOURCES.md lists where each comes from
and its sha256, which this script checks before reading). The output is deterministic: one
``<endpoint>.csv.gz`` per endpoint (smiles, inchikey, label, n_measurements, source), a
``removed/<endpoint>.csv.gz`` with every removed row and its reason, ``approved_drugs.csv.gz``,
``endpoints.csv`` and ``SOURCES.md``. The curation rules live in :mod:`molprop.io.curate`.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import logging
import math
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.errors import InvalidInputError
from molprop.io.curate import CurationRule, curate, standardise

log = logging.getLogger("build_admet_data")


@dataclass(frozen=True)
class Raw:
    """One raw file: where it comes from and its licence."""

    repo: str
    commit: str
    path: str
    licence: str

    @property
    def source_id(self) -> str:
        return f"{self.repo}@{self.commit[:7]}:{self.path}"


CHEMPROP = ("chemprop/chemprop", "3f2b73372a8968f0f73b2fb279a5780cae918d58")
AAMINI = ("aamini/chemprop", "a7a137a09589474a5c5a83f75fbddbddfb877dc8")
B3DB = ("theochem/B3DB", "75dab1cc607bb7a03f3de5c576cffd223e767844")
AQSOL = ("mcsorkun/AqSolDB", "8e02b548fd9a78778ff89a5aa9a460d1a289cc3a")
PHARMA = ("mindrank-ai/PharmaBench", "16a5258ecbd3917c1eae2dcd739d6534d3041ac3")
MIT_MOLNET = "MIT (chemprop repository); data: MoleculeNet (Wu et al. 2018)"
CC0_PB = "CC0-1.0 (PharmaBench repository: 'materials and data ... under the CC0 Licence')"

#: raw file name in --raw DIR -> its origin. sha256 is of the file as read here.
RAW: dict[str, Raw] = {
    "chemprop_tox21.csv": Raw(*CHEMPROP, "data/tox21.csv", MIT_MOLNET),
    "chemprop_clintox.csv": Raw(*CHEMPROP, "data/clintox.csv", MIT_MOLNET),
    "chemprop_freesolv.csv": Raw(
        *CHEMPROP, "data/freesolv.csv", "MIT (chemprop); FreeSolv (Mobley & Guthrie 2014)"
    ),
    "chemprop_lipo.csv": Raw(
        *CHEMPROP, "data/lipo.csv", "MIT (chemprop); AstraZeneca ChEMBL deposit (CC BY-SA 3.0)"
    ),
    "aamini_clearance_hepatocyte_az.csv": Raw(
        *AAMINI,
        "data/clearance_hepatocyte_az.csv",
        "MIT (repository); TDC Clearance_Hepatocyte_AZ (CC BY 4.0) from the AstraZeneca "
        "ChEMBL deposit (CC BY-SA 3.0)",
    ),
    "aamini_ld50_zhu.csv": Raw(
        *AAMINI, "data/ld50_zhu.csv", "MIT (repository); TDC LD50_Zhu (CC BY 4.0)"
    ),
    "b3db_classification.tsv": Raw(*B3DB, "B3DB/B3DB_classification.tsv", "CC0-1.0"),
    "b3db_regression.tsv": Raw(*B3DB, "B3DB/B3DB_regression.tsv", "CC0-1.0"),
    "aqsoldb_curated.csv": Raw(
        *AQSOL, "results/data_curated.csv", "CC0-1.0 (data/LICENSE); code MIT"
    ),
    "pharmabench_ames.csv": Raw(*PHARMA, "data/final_datasets/ames_cls_final_data.csv", CC0_PB),
    "pharmabench_cyp2c9.csv": Raw(
        *PHARMA, "data/final_datasets/cyp_2c9_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_cyp2d6.csv": Raw(
        *PHARMA, "data/final_datasets/cyp_2d6_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_cyp3a4.csv": Raw(
        *PHARMA, "data/final_datasets/cyp_3a4_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_hlm.csv": Raw(
        *PHARMA, "data/final_datasets/hum_mic_cl_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_rlm.csv": Raw(
        *PHARMA, "data/final_datasets/rat_mic_cl_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_mlm.csv": Raw(
        *PHARMA, "data/final_datasets/mou_mic_cl_reg_final_data.csv", CC0_PB
    ),
    "pharmabench_ppb.csv": Raw(*PHARMA, "data/final_datasets/ppb_reg_final_data.csv", CC0_PB),
    "pharmabench_logd.csv": Raw(*PHARMA, "data/final_datasets/logd_reg_final_data.csv", CC0_PB),
    "admet_ai_admet.csv": Raw(
        "PyPI admet-ai", "2.0.1", "admet_ai/resources/data/admet.csv", "MIT (admet-ai wheel)"
    ),
}

#: sha256 of each raw file (checked before it is read)
SHA256: dict[str, str] = {}

#: standardisation results shared by every endpoint (the Tox21 tasks share one file)
_CACHE: dict[str, tuple[str, str] | str] = {}

Reader = Callable[[Path], tuple[pd.Series, pd.Series, dict[int, str]]]


def _columns(smiles: str, label: str, sep: str = ",") -> Reader:
    def read(path: Path) -> tuple[pd.Series, pd.Series, dict[int, str]]:
        frame = pd.read_csv(path, sep=sep)
        return frame[smiles], pd.to_numeric(frame[label], errors="coerce"), {}

    return read


def _b3db_class(path: Path) -> tuple[pd.Series, pd.Series, dict[int, str]]:
    frame = pd.read_csv(path, sep="\t")
    labels = frame["BBB+/BBB-"].map({"BBB+": 1.0, "BBB-": 0.0})
    return frame["SMILES"], labels, {}


def _pic50(path: Path) -> tuple[pd.Series, pd.Series, dict[int, str]]:
    frame = pd.read_csv(path)
    ic50 = pd.to_numeric(frame["value"], errors="coerce")
    positive = ic50 > 0
    labels = pd.Series(np.nan, index=frame.index)
    labels[positive] = 6.0 - np.log10(ic50[positive])
    bad = {int(i): f"IC50 {v:g} µM ≤ 0 has no pIC50" for i, v in ic50[~positive].dropna().items()}
    return frame["Smiles_unify"], labels, bad


def _ppb_percent(path: Path) -> tuple[pd.Series, pd.Series, dict[int, str]]:
    frame = pd.read_csv(path)
    return frame["Smiles_unify"], 100.0 * pd.to_numeric(frame["value"], errors="coerce"), {}


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: its raw file, label, unit, rule and the metrics it is compared with."""

    name: str
    raw: str
    read: Reader
    label: str
    unit: str
    rule: CurationRule
    tdc_metric: str
    description: str
    admet_ai_id: str = ""
    notes: str = ""
    tdc_in_group: bool = False


def _cls() -> CurationRule:
    return CurationRule("classification")


def _tox21(task: str, what: str) -> Endpoint:
    return Endpoint(
        name=f"tox21_{task.lower().replace('-', '_')}",
        raw="chemprop_tox21.csv",
        read=_columns("smiles", task),
        label="active",
        unit="1 = active in the Tox21 assay",
        rule=_cls(),
        tdc_metric="AUROC",
        description=f"Tox21 {task}: {what}",
        admet_ai_id=task,
        notes="Tox21 (NIH/EPA/FDA, 2014 challenge) as shipped in MoleculeNet; not in the TDC "
        "ADMET group (TDC Tox21 is evaluated with AUROC).",
    )


TOX21 = {
    "NR-AR": "androgen receptor, full length",
    "NR-AR-LBD": "androgen receptor, ligand-binding domain",
    "NR-AhR": "aryl hydrocarbon receptor",
    "NR-Aromatase": "aromatase inhibition",
    "NR-ER": "estrogen receptor alpha, full length",
    "NR-ER-LBD": "estrogen receptor alpha, ligand-binding domain",
    "NR-PPAR-gamma": "PPAR-gamma",
    "SR-ARE": "antioxidant response element (Nrf2)",
    "SR-ATAD5": "ATAD5 genotoxicity",
    "SR-HSE": "heat-shock factor response element",
    "SR-MMP": "mitochondrial membrane potential",
    "SR-p53": "p53 stress response",
}
PB_NOTE = (
    "PharmaBench (Niu et al. 2024): ChEMBL/public assays merged after LLM-extracted "
    "experimental conditions were filtered; labels are measured values."
)

ENDPOINTS: list[Endpoint] = [
    Endpoint(
        "solubility_aqsoldb",
        "aqsoldb_curated.csv",
        _columns("SMILES", "Solubility"),
        "logS",
        "log10(mol/L)",
        CurationRule("regression", 0.5, -14.0, 3.0),
        "MAE",
        "aqueous solubility (AqSolDB, Sorkun et al. 2019)",
        "Solubility_AqSolDB",
        tdc_in_group=True,
    ),
    Endpoint(
        "lipophilicity_az",
        "chemprop_lipo.csv",
        _columns("smiles", "lipo"),
        "logD7.4",
        "log10 (octanol/buffer pH 7.4)",
        CurationRule("regression", 0.5, -3.0, 6.0),
        "MAE",
        "lipophilicity logD7.4 (AstraZeneca ChEMBL deposit, MoleculeNet Lipophilicity)",
        "Lipophilicity_AstraZeneca",
        tdc_in_group=True,
    ),
    Endpoint(
        "logd_pharmabench",
        "pharmabench_logd.csv",
        _columns("Smiles_unify", "value"),
        "logD",
        "log10 (octanol/buffer)",
        CurationRule("regression", 0.5, -6.0, 10.0),
        "MAE",
        "lipophilicity logD (PharmaBench, ChEMBL assays)",
        notes=PB_NOTE,
    ),
    Endpoint(
        "hydration_free_energy",
        "chemprop_freesolv.csv",
        _columns("smiles", "freesolv"),
        "dG_hyd_kcal_per_mol",
        "kcal/mol",
        CurationRule("regression", 0.5, -30.0, 5.0),
        "MAE",
        "hydration free energy (FreeSolv, experimental)",
        "HydrationFreeEnergy_FreeSolv",
    ),
    Endpoint(
        "bbb_b3db",
        "b3db_classification.tsv",
        _b3db_class,
        "bbb_permeable",
        "1 = BBB+ (logBB ≥ -1 or reported permeable)",
        _cls(),
        "AUROC",
        "blood-brain barrier permeability (B3DB classification, Meng et al. 2021)",
        "BBB_Martins",
        notes="B3DB (7,807 compounds) is a superset-style curation of 50 sources, not TDC's "
        "BBB_Martins (1,975); ADMET-AI's number is on BBB_Martins.",
    ),
    Endpoint(
        "logbb_b3db",
        "b3db_regression.tsv",
        _columns("SMILES", "logBB", sep="\t"),
        "logBB",
        "log10(C_brain/C_blood)",
        CurationRule("regression", 0.5, -4.0, 3.0),
        "MAE",
        "brain/blood concentration ratio (B3DB regression)",
    ),
    Endpoint(
        "ppb_pharmabench",
        "pharmabench_ppb.csv",
        _ppb_percent,
        "ppb_percent",
        "% bound in plasma",
        CurationRule("regression", 10.0, 0.0, 100.0),
        "MAE",
        "plasma protein binding (PharmaBench, human)",
        "PPBR_AZ",
        notes=PB_NOTE + " Raw fraction bound × 100. ADMET-AI's number is on TDC PPBR_AZ.",
    ),
    Endpoint(
        "clearance_hepatocyte_az",
        "aamini_clearance_hepatocyte_az.csv",
        _columns("smiles", "clearance_hepatocyte_az"),
        "cl_hep_ul_min_1e6cells",
        "µL/min/10^6 cells",
        CurationRule("regression", 10.0, 0.0, 1000.0),
        "Spearman",
        "intrinsic clearance in hepatocytes (AstraZeneca ChEMBL deposit via TDC)",
        "Clearance_Hepatocyte_AZ",
        tdc_in_group=True,
        notes="This copy has 1,213 rows; TDC's current Clearance_Hepatocyte_AZ has 1,020.",
    ),
    Endpoint(
        "clearance_microsome_human",
        "pharmabench_hlm.csv",
        _columns("Smiles_unify", "value"),
        "log_cl_hlm",
        "log10(mL/min/g)",
        CurationRule("regression", 0.5, -4.0, 8.0),
        "Spearman",
        "intrinsic clearance, human liver microsomes (PharmaBench HLMC)",
        notes=PB_NOTE,
    ),
    Endpoint(
        "clearance_microsome_rat",
        "pharmabench_rlm.csv",
        _columns("Smiles_unify", "value"),
        "log_cl_rlm",
        "log10(mL/min/g)",
        CurationRule("regression", 0.5, -4.0, 8.0),
        "Spearman",
        "intrinsic clearance, rat liver microsomes (PharmaBench RLMC)",
        notes=PB_NOTE,
    ),
    Endpoint(
        "clearance_microsome_mouse",
        "pharmabench_mlm.csv",
        _columns("Smiles_unify", "value"),
        "log_cl_mlm",
        "log10(mL/min/g)",
        CurationRule("regression", 0.5, -4.0, 8.0),
        "Spearman",
        "intrinsic clearance, mouse liver microsomes (PharmaBench MLMC)",
        notes=PB_NOTE,
    ),
    Endpoint(
        "cyp2c9_pic50",
        "pharmabench_cyp2c9.csv",
        _pic50,
        "pIC50",
        "-log10(IC50 / M)",
        CurationRule("regression", 1.0, 0.0, 12.0),
        "MAE",
        "CYP2C9 inhibition potency (PharmaBench)",
        notes=PB_NOTE + " pIC50 = 6 − log10(IC50/µM); "
        "raw IC50 is capped at 100 µM. TDC's CYP sets are binary (Veith), so no ADMET-AI number.",
    ),
    Endpoint(
        "cyp2d6_pic50",
        "pharmabench_cyp2d6.csv",
        _pic50,
        "pIC50",
        "-log10(IC50 / M)",
        CurationRule("regression", 1.0, 0.0, 12.0),
        "MAE",
        "CYP2D6 inhibition potency (PharmaBench)",
        notes=PB_NOTE + " pIC50 = 6 − log10(IC50/µM).",
    ),
    Endpoint(
        "cyp3a4_pic50",
        "pharmabench_cyp3a4.csv",
        _pic50,
        "pIC50",
        "-log10(IC50 / M)",
        CurationRule("regression", 1.0, 0.0, 12.0),
        "MAE",
        "CYP3A4 inhibition potency (PharmaBench)",
        notes=PB_NOTE + " pIC50 = 6 − log10(IC50/µM).",
    ),
    Endpoint(
        "ames_pharmabench",
        "pharmabench_ames.csv",
        _columns("Smiles_unify", "value"),
        "mutagenic",
        "1 = Ames positive",
        _cls(),
        "AUROC",
        "Ames mutagenicity (PharmaBench)",
        "AMES",
        notes=PB_NOTE + " ADMET-AI's number is on TDC AMES (Xu et al., 7,255).",
    ),
    Endpoint(
        "ld50_zhu",
        "aamini_ld50_zhu.csv",
        _columns("smiles", "ld50_zhu"),
        "pLD50",
        "log10(1/(mol/kg)), rat oral",
        CurationRule("regression", 0.5, -2.0, 12.0),
        "MAE",
        "acute oral toxicity in rat (Zhu et al. 2009 via TDC)",
        "LD50_Zhu",
        tdc_in_group=True,
    ),
    Endpoint(
        "clintox",
        "chemprop_clintox.csv",
        _columns("smiles", "CT_TOX"),
        "failed_tox",
        "1 = failed clinical trials for toxicity",
        _cls(),
        "AUROC",
        "clinical-trial toxicity (ClinTox, MoleculeNet)",
        "ClinTox",
    ),
] + [_tox21(task, what) for task, what in TOX21.items()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_gz(frame: pd.DataFrame, path: Path) -> None:
    """gzip CSV with a fixed header time so reruns give identical bytes."""
    text = frame.to_csv(index=False, lineterminator="\n", float_format="%.6g")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())


def _standardise_or_reason(smiles: object) -> tuple[str, str] | str:
    try:
        return standardise(smiles)
    except InvalidInputError as exc:
        return f"invalid SMILES: {exc}"


def prefill_cache(raw_dir: Path, workers: int) -> None:
    """Standardise every distinct raw SMILES once, in ``workers`` processes (same results as
    :func:`molprop.io.curate.curate` computes one by one)."""
    distinct: dict[str, None] = {}
    for endpoint in ENDPOINTS:
        smiles, _, _ = endpoint.read(raw_dir / endpoint.raw)
        distinct.update((s, None) for s in smiles.tolist() if isinstance(s, str))
    todo = [s for s in distinct if s not in _CACHE]
    with multiprocessing.Pool(workers) as pool:
        results = pool.map(_standardise_or_reason, todo, chunksize=200)
    _CACHE.update(zip(todo, results, strict=True))
    log.info("standardised %d distinct SMILES", len(todo))


def build_endpoint(endpoint: Endpoint, raw_dir: Path, out: Path) -> dict[str, object]:
    smiles, labels, bad = endpoint.read(raw_dir / endpoint.raw)
    result = curate(smiles, labels, endpoint.label, endpoint.rule, _CACHE)
    removed = result.removed.copy()
    for row, reason in bad.items():
        removed.loc[removed["row"] == row, "reason"] = reason
    table = result.table.copy()
    table["source"] = RAW[endpoint.raw].source_id
    _write_gz(table, out / f"{endpoint.name}.csv.gz")
    _write_gz(removed, out / "removed" / f"{endpoint.name}.csv.gz")
    reasons = (
        removed["reason"]
        .str.replace(r"\d+", "N", regex=True)
        .str.replace(r"invalid SMILES: .*", "invalid SMILES", regex=True)
    )
    summary = {
        "n_raw": result.n_in,
        "n": len(table),
        "removed": dict(sorted(reasons.value_counts().items())),
    }
    if endpoint.rule.task == "classification":
        summary["positives"] = int(table[endpoint.label].sum())
    log.info("%s: %d -> %d", endpoint.name, result.n_in, len(table))
    return summary


def build_approved(raw_dir: Path, out: Path) -> dict[str, object]:
    """Approved drugs: ClinTox rows with FDA_APPROVED = 1, standardised, one per InChIKey."""
    frame = pd.read_csv(raw_dir / "chemprop_clintox.csv")
    rows, removed, seen = [], [], set()
    for i, (smi, approved) in enumerate(zip(frame["smiles"], frame["FDA_APPROVED"], strict=True)):
        if approved != 1:
            continue
        try:
            canonical, key = standardise(smi)
        except InvalidInputError as exc:
            removed.append({"row": i, "smiles_raw": smi, "reason": f"invalid SMILES: {exc}"})
            continue
        if key in seen:
            removed.append({"row": i, "smiles_raw": smi, "reason": "duplicate InChIKey"})
            continue
        seen.add(key)
        rows.append({"smiles": canonical, "inchikey": key})
    table = pd.DataFrame(rows)
    table["source"] = RAW["chemprop_clintox.csv"].source_id
    _write_gz(table, out / "approved_drugs.csv.gz")
    _write_gz(
        pd.DataFrame(removed, columns=["row", "smiles_raw", "reason"]),
        out / "removed" / "approved_drugs.csv.gz",
    )
    return {
        "n_raw": int((frame["FDA_APPROVED"] == 1).sum()),
        "n": len(table),
        "removed": len(removed),
    }


def admet_ai_metrics(raw_dir: Path) -> dict[str, dict[str, float]]:
    frame = pd.read_csv(raw_dir / "admet_ai_admet.csv")
    out: dict[str, dict[str, float]] = {}
    for _, row in frame.iterrows():
        out[row["id"]] = {
            k: float(row[k]) for k in ("AUROC", "AUPRC", "MAE", "R^2") if not pd.isna(row[k])
        }
    return out


def endpoints_table(metrics: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for e in ENDPOINTS:
        theirs = metrics.get(e.admet_ai_id, {})
        # ADMET-AI's admet.csv reports AUROC/AUPRC or MAE/R^2; the TDC metric where present
        name = (
            e.tdc_metric
            if e.tdc_metric in theirs
            else ("AUROC" if "AUROC" in theirs else "MAE" if "MAE" in theirs else "")
        )
        rows.append(
            {
                "name": e.name,
                "task": e.rule.task,
                "label": e.label,
                "unit": e.unit,
                "tdc_metric": e.tdc_metric,
                "tdc_admet_group": e.tdc_in_group,
                "admet_ai_id": e.admet_ai_id,
                "admet_ai_metric": name,
                "admet_ai_value": round(theirs[name], 4) if name else math.nan,
                "admet_ai_source": "admet-ai 2.0.1 wheel, admet_ai/resources/data/admet.csv "
                f"(sha256 {SHA256.get('admet_ai_admet.csv', '')[:16]}…)"
                if name
                else "",
                "description": e.description,
            }
        )
    return pd.DataFrame(rows)


def sources_md(summaries: dict[str, dict[str, object]], approved: dict[str, object]) -> str:
    buf = io.StringIO()
    w = buf.write
    w("# ADMET training data: sources, licences, curation\n\n")
    w(
        "Built by `scripts/build_admet_data.py --raw DIR` (deterministic; rerun to check). "
        "Every table has `smiles` (RDKit canonical, standardised), `inchikey` (standard), the "
        "label (unit-bearing name), `n_measurements` (raw rows merged) and `source`.\n\n"
    )
    w("## Curation rules (molprop/io/curate.py)\n\n")
    w(
        "1. Standardise: RDKit cleanup, largest-fragment parent, neutralise (Uncharger), "
        "canonical SMILES. Unparsable SMILES, wildcard atoms (`*`) or no InChIKey: row removed.\n"
        "2. Labels: missing / non-finite / outside the endpoint's plausible range (below), or a "
        "classification label other than 0/1: row removed.\n"
        "3. Duplicates by InChIKey. Regression: averaged when max − min ≤ the endpoint's "
        "tolerance, else every row of that molecule dropped. Classification: identical labels "
        "collapse to one row; disagreeing labels drop the molecule.\n"
        "4. Every removed row (source row number, raw SMILES, raw label, reason) is in "
        "`removed/<endpoint>.csv.gz`.\n\n"
        "No label comes from a model's prediction: every label is a measured value as "
        "published by its source.\n\n"
    )
    w(
        "## Raw files\n\n| file | repository @ commit : path | licence | sha256 |\n|---|---|---|---|\n"
    )
    for name, raw in RAW.items():
        w(
            f"| {name} | {raw.repo} @ {raw.commit[:10]} : {raw.path} | {raw.licence} | "
            f"`{SHA256.get(name, '')}` |\n"
        )
    w(
        "\nTo rebuild: put each file in one folder under the name in the first column (`git "
        "show COMMIT:PATH` of the repository's snapshot; `admet_ai_admet.csv` from the "
        "admet-ai 2.0.1 wheel) and run the script; it refuses a file whose sha256 differs.\n"
    )
    w("\n## Endpoints\n\n")
    w(
        "| endpoint | task | label (unit) | source | licence | n raw → n | tolerance / range | "
        "TDC metric | removed (reason: rows) |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    for e in ENDPOINTS:
        s = summaries[e.name]
        rule = e.rule
        rng = f"[{rule.low:g}, {rule.high:g}]" if rule.task == "regression" else "0/1"
        tol = f"±spread ≤ {rule.tolerance:g}; " if rule.task == "regression" else ""
        removed = "; ".join(f"{k}: {v}" for k, v in s["removed"].items()) or "none"
        pos = f" ({s['positives']} positive)" if "positives" in s else ""
        w(
            f"| {e.name} | {rule.task} | {e.label} ({e.unit}) | {RAW[e.raw].source_id} | "
            f"{RAW[e.raw].licence} | {s['n_raw']} → {s['n']}{pos} | {tol}{rng} | {e.tdc_metric}"
            f"{'' if e.tdc_in_group else ' (not in TDC ADMET group)'} | {removed} |\n"
        )
    w("\nNotes per endpoint:\n\n")
    for e in ENDPOINTS:
        if e.notes and not e.name.startswith("tox21_"):
            w(f"- **{e.name}**: {e.notes}\n")
    w(f"- **tox21_***: {ENDPOINTS[-1].notes}\n")
    w(
        "\n## Approved-drug reference set (`approved_drugs.csv.gz`)\n\n"
        "ClinTox (MoleculeNet) rows with FDA_APPROVED = 1, from "
        f"{RAW['chemprop_clintox.csv'].source_id} ({MIT_MOLNET}); standardised as above, one row per InChIKey: "
        f"{approved['n_raw']} → {approved['n']} ({approved['removed']} removed, listed in "
        "`removed/approved_drugs.csv.gz`). DrugBank's approved list (used by ADMET-AI) is not "
        "used: its licence is non-commercial.\n"
    )
    w("\n## Considered and not used\n\n")
    for item in SKIPPED:
        w(f"- {item}\n")
    return buf.getvalue()


SKIPPED = [
    "DrugBank approved drugs (admet-ai wheel `drugbank_approved.csv`): DrugBank licence is "
    "non-commercial (CC BY-NC 4.0); not redistributed, not used.",
    "Any model's predictions (e.g. ADMET-AI outputs): never used as labels.",
    "TDC ADMET-group copies in repositories without a licence (e.g. Caco2_Wang, HIA_Hou, "
    "Pgp_Broccatelli, Bioavailability_Ma, VDss_Lombardo, Half_Life_Obach, hERG, CYP*_Veith, "
    "DILI): no copy with a clear licence was found offline (repositories holding them, such as "
    "DonghaiZHAO-ZJU/Benchmark-ADMET-2025, carry no licence); skipped.",
    "aamini/chemprop data/ppbr_az.csv: 2,790 rows mixing species without a species column (TDC "
    "PPBR_AZ human is 1,614); skipped, PharmaBench PPB (human) used instead.",
    "PharmaBench BBB and water solubility: B3DB and AqSolDB cover these endpoints with their own "
    "curation; not duplicated.",
    "MoleculeNet SIDER (27 side-effect organ classes from package inserts): not an ADMET assay "
    "endpoint; left out of the panel.",
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, required=True, help="folder with the raw files")
    parser.add_argument("--out", type=Path, default=Path("data/admet"))
    parser.add_argument("--only", nargs="*", help="build only these endpoints")
    parser.add_argument("--workers", type=int, default=1, help="standardisation processes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name, raw in RAW.items():
        path = args.raw / name
        if not path.exists():
            raise SystemExit(f"missing raw file {path} ({raw.repo} @ {raw.commit} : {raw.path})")
        SHA256[name] = sha256(path)
        if name in EXPECTED_SHA256 and SHA256[name] != EXPECTED_SHA256[name]:
            raise SystemExit(f"{path}: sha256 {SHA256[name]} != expected {EXPECTED_SHA256[name]}")
    (args.out / "removed").mkdir(parents=True, exist_ok=True)
    if args.workers > 1:
        prefill_cache(args.raw, args.workers)
    summaries = {
        e.name: build_endpoint(e, args.raw, args.out)
        for e in ENDPOINTS
        if not args.only or e.name in args.only
    }
    if args.only:
        return
    approved = build_approved(args.raw, args.out)
    endpoints_table(admet_ai_metrics(args.raw)).to_csv(
        args.out / "endpoints.csv", index=False, lineterminator="\n"
    )
    (args.out / "SOURCES.md").write_text(sources_md(summaries, approved))


#: the sha256 of each raw file this build was made from (a changed file stops the build)
EXPECTED_SHA256: dict[str, str] = {
    "aamini_clearance_hepatocyte_az.csv": "735930cb06e73e51b1a95ec80575ae16771524ba5eb085361abcd938d51b7168",
    "aamini_ld50_zhu.csv": "d7f436bf3cfe4375d17abfa33d57fcd0e8930e840946c562bbf1428acb1b890b",
    "admet_ai_admet.csv": "32d46092deab7a553e319bdecaaed5e7dc2300c992d74d0a68c13c37f4af9d2d",
    "aqsoldb_curated.csv": "363a42a4e4ea8e6039758146d34efdd95cde2da81c665316cacc1869e0a805ed",
    "b3db_classification.tsv": "47a160aea1551423ead2aab70b301fb1646aea03cf151fd614eb37c78fa55b82",
    "b3db_regression.tsv": "1be4e33ab1fa1d99897541b6e0a9a00cd6061cf970a36dc838e640407735eba1",
    "chemprop_clintox.csv": "cc561402d058a0d996a9f5e5d02bc20f6652b7003525b32c3598b8da4b24e9b7",
    "chemprop_freesolv.csv": "97d74c86228d4c16c0fbbf063bb8280354d8152db09a85ade8517a2f43bd9824",
    "chemprop_lipo.csv": "aa9bd9669188e35efd908758a75561bba402016d901fed2d0d949289abbcf31c",
    "chemprop_tox21.csv": "b58cc1f683e78e3c7a1bf7116e9aac0119804018d100f7b8cdb0857941c31aca",
    "pharmabench_ames.csv": "3d867fa3748c94579d6bccea569a1d8eb38c6cfbd723fe7933f7adb1097566ed",
    "pharmabench_cyp2c9.csv": "cfb5ace6abd6ae97345b8a0e70db04cae6570f9965d49073c53864a5620edf19",
    "pharmabench_cyp2d6.csv": "54af95afd7fef8bbea27f195453dbfddb8dda6bdf7947dcc687c65e136150aa7",
    "pharmabench_cyp3a4.csv": "c51df8ba1dbf94949e2fc2d47f9d495e554d77de32e89574ede31d809c5150e6",
    "pharmabench_hlm.csv": "54a91fd2ec3770f6d5fddf445e7517637a4cb73d4509cf5dcbb0f1c30d3e340a",
    "pharmabench_logd.csv": "501d3fd37e050ca1602f754b5890d618b618fd7c15e24b5e6c88f6f5d01cb6e9",
    "pharmabench_mlm.csv": "de684ceb2302d5efcbc8d358f14f1f69c75a3cd36adf88c013b8c1a0ba7923d4",
    "pharmabench_ppb.csv": "a5c9402750dbc1d064407c062c791f66e82cd91b1df9c8fd03d9ae2f2a60f541",
    "pharmabench_rlm.csv": "bdf74a052e9c06baf35c26879689023d4a41825d635890d509aef9d3326c7755",
}


if __name__ == "__main__":
    main()
