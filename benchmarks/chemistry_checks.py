"""What the chemistry checks before the model change (molprop.chem.standardize): on drug-like
sets shipped in the repository and on a hand-made set of hostile inputs.

Sets: BBBP (2,050 compounds, mostly marketed drugs, many written as salts; the closest thing to
an approved-drug set in the repository), Lipophilicity (4,200 ChEMBL compounds), ESOL (1,128
small molecules), and the first 10,000 rows of HIV (NCI screening compounds, with metal
complexes); plus ``HOSTILE`` below. For each set: rows whose molecule standardisation changes
(a fragment dropped, a charge neutralised), rows now ``unsupported`` and why, and, for the
changed rows a model still predicts, how much the prediction moves compared with the previous
behaviour (the whole input featurised as written): the shipped model of the set's property,
and ``solubility`` and ``bbb_penetration`` on BBBP. Predictions of unchanged rows are unchanged
by construction (the same graph).

Usage: python -m benchmarks.chemistry_checks  (writes docs/results/chemistry_checks.md; about
2 min on 1 thread of a shared 2-core machine)
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.chem.smiles import parse_smiles
from molprop.chem.standardize import standardize
from molprop.errors import InvalidInputError, UnsupportedMoleculeError
from molprop.inference import Predictor
from molprop.io.table import featurize_rows

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "moleculenet"
OUT = REPO / "docs" / "results" / "chemistry_checks.md"
#: (label, file, models predicted on its changed rows, rows read)
SETS = [
    ("BBBP", "bbbp.csv.gz", ["bbb_penetration", "solubility"], None),
    ("Lipophilicity", "lipo_chemprop.csv.gz", ["lipophilicity"], None),
    ("ESOL", "delaney_chemprop.csv.gz", ["solubility"], None),
    ("HIV (first 10,000)", "hiv.csv.gz", ["solubility"], 10_000),
]
#: hostile inputs a user may send: (what, SMILES)
HOSTILE = [
    ("sodium chloride", "[Na+].[Cl-]"),
    ("water", "O"),
    ("cisplatin", "N.N.Cl[Pt]Cl"),
    ("copper sulfate", "[Cu+2].[O-]S([O-])(=O)=O"),
    ("Pd porphyrin (bonded)", "c1cc2cc3ccc4n3[Pd]n5c(cc1n2)ccc5cc1ccc(c4)n1"),
    ("Pd porphyrin (ionic)", "C1=CC2=CC3=CC=C([N-]3)C=C4C=CC(=N4)C=C5C=CC(=N5)C=C1[N-]2.[Pd+2]"),
    ("ferrocene", "[CH-]1C=CC=C1.[CH-]1C=CC=C1.[Fe+2]"),
    ("tributyltin chloride", "CCCC[Sn](Cl)(CCCC)CCCC"),
    ("sodium benzoate", "[Na+].[O-]C(=O)c1ccccc1"),
    ("sodium benzoate (bond to Na)", "O=C(O[Na])c1ccccc1"),
    ("calcium dibenzoate", "O=C([O-])c1ccccc1.O=C([O-])c1ccccc1.[Ca+2]"),
    ("triethylamine hydrochloride", "CCN(CC)CC.Cl"),
    ("glycine zwitterion", "[NH3+]CC([O-])=O"),
    ("tetramethylammonium chloride", "C[N+](C)(C)C.[Cl-]"),
    ("diethyl selenide", "CC[Se]CC"),
    ("xenon", "[Xe]"),
    ("deuterium", "[2H][2H]"),
    ("dummy atom", "*"),
    ("attachment point", "[*]C"),
    ("999-carbon chain", "C" * 999),
    ("polyethylene glycol 60-mer", "O" + "CCO" * 60),
]

log = logging.getLogger(__name__)


def check(smiles: str) -> tuple[str, str, str]:
    """(outcome, standardised SMILES, reason): outcome is unchanged / changed / unsupported /
    invalid_input with the shipped models' default elements (the organic subset); a change is
    "fragment dropped" or "neutralised only"."""
    try:
        mol = parse_smiles(smiles)
    except InvalidInputError as exc:
        return "invalid_input", "", str(exc)
    try:
        result = standardize(mol)
    except UnsupportedMoleculeError as exc:
        return "unsupported", exc.smiles or "", str(exc)
    if not result.changed:
        return "unchanged", result.smiles, ""
    dropped = result.mol.GetNumAtoms() < mol.GetNumAtoms()
    return "changed", result.smiles, "fragment dropped" if dropped else "neutralised only"


def reason_kind(reason: str) -> str:
    if reason.startswith("inorganic"):
        return "inorganic (no carbon)"
    metal = re.match(r"contains the metal ([A-Za-z, ]+):", reason)
    if metal:
        return f"metal: {metal.group(1)}"
    element = re.match(r"contains ([A-Za-z*, ]+):", reason)
    return f"element: {element.group(1)}" if element else reason[:40]


def old_predictions(predictor: Predictor, smiles: list[str]) -> pd.DataFrame:
    """The previous behaviour: the input featurised as written, no checks."""
    return predictor.predict_graphs(featurize_rows(smiles, predictor.featurizer.from_smiles))


def compare(predictor: Predictor, smiles: list[str]) -> dict:
    """Old vs new prediction of ``smiles`` (rows the checks change and still predict)."""
    target = predictor.target_names[0]
    old = old_predictions(predictor, smiles)
    new = predictor.predict(smiles)
    ok = (old["status"] == "ok").to_numpy() & (new["status"] == "ok").to_numpy()
    delta = np.abs(old[target].to_numpy()[ok] - new[target].to_numpy()[ok])
    out = {
        "n": int(ok.sum()),
        "moved": int((delta > 1e-4).sum()),
        "median": float(np.median(delta)) if len(delta) else float("nan"),
        "max": float(delta.max()) if len(delta) else float("nan"),
    }
    if predictor.task_type == "classification":
        flips = (old[target].to_numpy()[ok] >= 0.5) != (new[target].to_numpy()[ok] >= 0.5)
        out["flips"] = int(flips.sum())
    else:
        std = new[f"{target}_std"].to_numpy()[ok]
        out["beyond_std"] = int((delta > std).sum())
    return out


def measure_set(label: str, file: str, models: list[str], rows: int | None) -> dict:
    frame = pd.read_csv(DATA / file, nrows=rows, dtype=str, keep_default_na=False)
    smiles = frame["smiles"].tolist()
    checks = [check(s) for s in smiles]
    outcomes = Counter(c[0] for c in checks)
    reasons = Counter(reason_kind(c[2]) for c in checks if c[0] == "unsupported")
    changed = [s for s, c in zip(smiles, checks) if c[0] == "changed"]
    kinds = Counter(c[2] for c in checks if c[0] == "changed")
    comparisons = {}
    for name in models:
        comparisons[name] = compare(Predictor.from_pretrained(name), changed) if changed else {}
    examples = [(s, c[1]) for s, c in zip(smiles, checks) if c[0] == "changed"][:3]
    return {
        "label": label,
        "rows": len(smiles),
        "outcomes": outcomes,
        "reasons": reasons,
        "kinds": kinds,
        "comparisons": comparisons,
        "examples": examples,
    }


def measure_hostile() -> list[dict]:
    predictor = Predictor.from_pretrained("solubility")
    target = predictor.target_names[0]
    smiles = [s for _, s in HOSTILE]
    old = old_predictions(predictor, smiles)
    old_domain = predictor.domain.assess(smiles)[1]
    new = predictor.predict(smiles)
    rows = []
    for i, (what, smi) in enumerate(HOSTILE):
        before = f"ok {old[target][i]:.2f}" if old["status"][i] == "ok" else old["status"][i]
        if old["status"][i] == "ok":
            before += " (in domain)" if old_domain[i] else " (out of domain)"
        after = new["status"][i]
        if after == "ok":
            flag = new["in_domain"][i]
            after += f" {new[target][i]:.2f}" + (" (in domain)" if flag else " (out of domain)")
        rows.append(
            {
                "what": what,
                "smiles": smi if len(smi) <= 40 else smi[:37] + "...",
                "before": before,
                "after": after,
                "read": read if isinstance(read := new["standardized_smiles"][i], str) else "",
                "error": new["error"][i],
            }
        )
    return rows


def markdown(sets: list[dict], hostile: list[dict], seconds: float) -> str:
    lines = [
        "# Chemistry checks before the model: what they change",
        "",
        "`python -m benchmarks.chemistry_checks` (this page; "
        f"{seconds:.0f} s on 1 thread of a shared 2-core machine). The checks "
        '(`molprop/chem/standardize.py`, README "Chemistry checks before the model"): the '
        "largest organic fragment, neutralised; inorganic input, metals other than alkali / "
        "alkaline-earth counter-ions and elements outside the model's training set are "
        "`unsupported` (the shipped models accept the organic subset H, B, C, N, O, F, Si, P, "
        'S, Cl, Br, I). "Before" is the previous behaviour: the whole input featurised as '
        "written and predicted.",
        "",
        "## Drug-like and screening sets",
        "",
        "| set | rows | unchanged | changed | unsupported | invalid input | unsupported: why |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in sets:
        o = s["outcomes"]
        why = ", ".join(f"{k} {v}" for k, v in s["reasons"].most_common()) or "-"
        lines.append(
            f"| {s['label']} | {s['rows']} | {o['unchanged']} | {o['changed']} | "
            f"{o['unsupported']} | {o['invalid_input']} | {why} |"
        )
    lines += [
        "",
        "Changed rows, and how their predictions move (|new - before| on the rows both "
        'predict; "moved": by more than 1e-4; regression: how many move by more than the '
        "ensemble's std; classifier: how many cross 0.5):",
        "",
        "| set | changed: fragment dropped / neutralised only | model | rows | moved | "
        "median abs change | max abs change | beyond std / class flips |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for s in sets:
        kinds = f"{s['kinds']['fragment dropped']} / {s['kinds']['neutralised only']}"
        for name, c in s["comparisons"].items():
            if not c:
                continue
            extra = c.get("flips", c.get("beyond_std"))
            lines.append(
                f"| {s['label']} | {kinds} | {name} | {c['n']} | {c['moved']} | "
                f"{c['median']:.3f} | {c['max']:.3f} | {extra} |"
            )
    lines += [
        "",
        "The shipped models do not record their training elements, so the organic subset "
        "applies to them: the Lipophilicity row with Se is a molecule of that model's own "
        "training table, now `unsupported`. A model trained with this release records its "
        "training elements in its domain and accepts them.",
        "",
        "Examples of changed rows (input -> standardised):",
        "",
    ]
    for s in sets:
        for raw, std in s["examples"]:
            lines.append(f"- {s['label']}: `{raw}` -> `{std}`")
    lines += [
        "",
        "## Hostile inputs (shipped `solubility` model)",
        "",
        "| input | SMILES | before | now | read as | reason |",
        "|---|---|---|---|---|---|",
    ]
    for r in hostile:
        read = r["read"] if len(r["read"]) <= 40 else r["read"][:37] + "..."
        lines.append(
            f"| {r['what']} | `{r['smiles']}` | {r['before']} | {r['after']} | "
            f"{'`' + read + '`' if read else ''} | {r['error']} |"
        )
    lines += [
        "",
        "Large organic molecules (the 999-carbon chain, the PEG 60-mer) are still predicted: "
        "they are organic and use known elements; their `in_domain` is false (heavy atoms "
        "outside the training range) and the service refuses molecules over "
        "`MOLPROP_MAX_HEAVY_ATOMS` before the model.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    start = time.perf_counter()
    sets = [measure_set(*spec) for spec in SETS]
    hostile = measure_hostile()
    OUT.write_text(markdown(sets, hostile, time.perf_counter() - start))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
