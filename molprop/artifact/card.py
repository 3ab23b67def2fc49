"""Model cards: ``card.md`` generated from an artifact's ``config.json`` and ``metrics.json``.

Every number in the card is read from the artifact (nothing is typed by hand), so the card is
rewritten whenever the model is retrained.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from molprop.artifact.domain import ApplicabilityDomain
from molprop.artifact.store import load_config

CARD_NAME = "card.md"
REPO = Path(__file__).resolve().parents[2]


def _shown_path(path: str) -> str:
    """A data path relative to the repository when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return path


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def metrics_table(test: dict, task_type: str) -> list[str]:
    """Markdown table of the test metrics: one row per member, then the ensemble."""
    keys = (
        ["roc_auc", "mcc", "accuracy"] if task_type == "classification" else ["rmse", "mae", "r2"]
    )
    lines = ["| model | " + " | ".join(keys) + " | n |", "|---" * (len(keys) + 2) + "|"]
    rows = [(f"member {i}", m) for i, m in enumerate(test.get("members", []))]
    rows.append(("**ensemble (mean)**", test["ensemble"]))
    for label, m in rows:
        lines.append(
            f"| {label} | "
            + " | ".join(_fmt(m.get(k, "")) for k in keys)
            + f" | {m.get('n', '')} |"
        )
    return lines


def domain_lines(directory: Path) -> list[str]:
    domain = ApplicabilityDomain.load(directory)
    if domain is None:
        return ["No applicability-domain file: `in_domain` is not reported for this model."]
    lines = [
        f"`in_domain` is true when the maximum Tanimoto similarity (Morgan radius {domain.radius}, "
        f"{domain.n_bits} bits) of the query to the {len(domain.fingerprints)} training molecules "
        f"is at least **{domain.threshold:.3f}** — the {domain.percentile:g}th percentile of the "
        "training molecules' leave-one-out nearest-neighbour similarity "
        "(`molprop/inference/domain.py`).",
    ]
    if domain.heavy_atoms is not None:
        low, high = domain.heavy_atoms
        lines[0] += (
            f" It must also have {low}–{high} heavy atoms, the size range of the "
            "training molecules (fingerprints alone do not see size)."
        )
    split_path = directory / "split.csv"
    if split_path.exists():
        split = pd.read_csv(split_path, dtype={"smiles": str, "split": str})
        test = split.loc[split["split"] == "test", "smiles"].tolist()
        if test:
            frac = float(domain.in_domain(test).mean())
            lines.append(
                f"On the scaffold-split test set, {frac:.0%} of the molecules are in domain."
            )
    return lines


def write_card(
    directory: str | Path,
    *,
    title: str,
    data_source: str,
    licence: str,
    intended_use: str,
    reference: str = "",
) -> Path:
    """Write ``card.md`` into the artifact ``directory``."""
    directory = Path(directory)
    config = load_config(directory)
    metrics = json.loads((directory / "metrics.json").read_text())
    task, model, train = config.task, config.model, config.train
    unit = ", ".join(u for u in task.units if u) or "(unitless)"
    sizes = metrics.get("training", {}).get("split_sizes", {})
    output = (
        "probability of the positive class"
        if task.task_type == "classification"
        else f"column `{', '.join(task.target_names)}` of the data, in {unit}"
    )
    lines = [
        f"# {config.name}: {title}",
        "",
        f"Version {config.version} · {task.task_type} · output: {output} · "
        f"uncertainty: standard deviation over the {config.n_members} ensemble members.",
        "",
        "## Data and licence",
        "",
        f"- Data: {data_source} (`{_shown_path(config.provenance.data)}`).",
        f"- Licence: {licence}.",
        f"- Rows used: {metrics.get('training', {}).get('n_rows_valid', '?')} valid, "
        f"{metrics.get('training', {}).get('n_rows_invalid', '?')} rejected (unparsable SMILES).",
        "",
        "## Split",
        "",
        f"Balanced Bemis–Murcko scaffold split (seed {train.seed}), no scaffold in two "
        f"parts: train {sizes.get('train', '?')}, validation {sizes.get('val', '?')}, "
        f"test {sizes.get('test', '?')} molecules. The validation part is used for early "
        "stopping only; the test part is never seen in training.",
        "",
        "## Model",
        "",
        f"Ensemble of {config.n_members} {model.token_kind.upper()} (edge set attention) members, "
        f"hidden {model.hidden_dim}, {model.heads} heads, layers `{model.layers}`, "
        f"{model.num_seeds} PMA seeds, size path {'on' if model.size_path else 'off'}; "
        f"AdamW lr {train.lr}, batch {train.batch_size}, up to "
        f"{train.epochs} epochs with early stopping (patience {train.patience}). "
        "Reproduce with `make pretrained`.",
        "",
        "## Test metrics (scaffold-split test set)",
        "",
        *metrics_table(metrics["test"], task.task_type),
        "",
    ]
    if reference:
        lines += [f"Reference: {reference} (published, on a comparable scaffold split).", ""]
    lines += [
        "## Intended use",
        "",
        f"{intended_use[0].upper()}{intended_use[1:]}. A screening aid, not a replacement for "
        "measurement; do not use for regulatory or clinical decisions.",
        "",
        "## Applicability domain and limits",
        "",
        *domain_lines(directory),
        "",
        "- Trained on a few hundred to a few thousand small organic molecules: predictions for "
        "metals, large peptides, polymers or molecules unlike the training set are unreliable "
        "(check `in_domain` and `uncertainty`).",
        "- 2D graph model: stereoisomers and conformers are not distinguished.",
        "- Small CPU-friendly configuration; larger models trained longer are more accurate.",
        "",
    ]
    path = directory / CARD_NAME
    path.write_text("\n".join(lines))
    return path
