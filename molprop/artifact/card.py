"""Model cards: ``card.md`` generated from an artifact's ``config.json`` and ``metrics.json``.

Every number and every statement about the model is read from the artifact (nothing is typed by
hand): the token kind (ESA or NSA), the input (2D RDKit graph and its featuriser version, or 3D
radius graph with its cutoff, periodic or not), per-atom targets, where a fine-tuned model came
from and what augments it. The card is rewritten whenever the model is retrained.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from molprop.artifact.calibration import NOT_CALIBRATED, Calibration, ConformalTarget
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.domain import ApplicabilityDomain
from molprop.artifact.paths import artifact_file
from molprop.artifact.reference import Reference
from molprop.artifact.store import load_config, read_metrics

CARD_NAME = "card.md"
#: what ``Provenance.data`` holds when the training table was passed as a DataFrame
_IN_MEMORY_DATA = "<DataFrame>"
_SPLITS = {
    "scaffold": "scaffold-split",
    "random": "random-split",
    "column": "given-split",
}


def read_card(directory: str | Path) -> str:
    """``card.md`` of the artifact ``directory``; ``""`` if it has none."""
    path = artifact_file(directory, CARD_NAME)
    return path.read_text() if path.exists() else ""


def _shown_path(path: str, root: Path | None) -> str:
    """``path`` relative to ``root`` (default: the working directory) when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to((root or Path.cwd()).resolve()))
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


def domain_lines(directory: Path, test_set: str = "test set") -> list[str]:
    """What ``in_domain`` means for the model, and how much of ``split.csv``'s test part is."""
    domain = ApplicabilityDomain.load(directory)
    if domain is None:
        return ["No applicability-domain file: `in_domain` is not reported for this model."]
    lines = [
        f"`in_domain` is true when the maximum Tanimoto similarity (Morgan radius {domain.radius}, "
        f"{domain.n_bits} bits) of the query to the {len(domain.fingerprints)} training molecules "
        f"is at least **{domain.threshold:.3f}** — the {domain.percentile:g}th percentile of the "
        "training molecules' leave-one-out nearest-neighbour similarity "
        "(`molprop/artifact/domain.py`).",
    ]
    if domain.heavy_atoms is not None:
        low, high = domain.heavy_atoms
        lines[0] += (
            f" It must also have {low}–{high} heavy atoms, the size range of the "
            "training molecules (fingerprints alone do not see size)."
        )
    split_path = artifact_file(directory, "split.csv")
    if split_path.exists():
        split = pd.read_csv(split_path, dtype={"smiles": str, "split": str})
        test = split.loc[split["split"] == "test", "smiles"].tolist()
        if test:
            frac = float(domain.in_domain(test).mean())
            lines.append(f"On the {test_set}, {frac:.0%} of the molecules are in domain.")
    return lines


# ----------------------------------------------------------------- calibration

CALIBRATION_HEADING = "## Uncertainty and calibration"


def percentile_lines(directory: Path) -> list[str]:
    """The card's section on ``<target>_percentile`` (none without a stored reference)."""
    stored = Reference.load(directory)
    if stored is None:
        return []
    spans = ", ".join(
        f"`{t}` {q[10]:.3g} / {q[100]:.3g} / {q[190]:.3g}" for t, q in stored.quantiles.items()
    )
    return [
        "## Percentiles among approved drugs",
        "",
        f"`<target>_percentile` is the value's percentile (0-100) among this model's predictions "
        f"for {stored.n} {stored.name} (the molecules its chemistry checks accept); 5th / 50th / "
        f"95th percentile of those predictions: {spans}. A percentile compares with drugs, not "
        "with a measured scale.",
        "",
    ]


_BIN_LABELS = {"in_domain": "in domain", "out_of_domain": "out of domain"}


def _pct(value: object) -> str:
    return f"{100 * value:.1f} %" if isinstance(value, float) else "?"


def uncertainty_text(config: ArtifactConfig, calibration: Calibration | None) -> str:
    """The card's first line: what the uncertainty and the output are."""
    text = f"standard deviation over the {config.n_members} ensemble members"
    if calibration is None:
        return text + " (not calibrated: no intervals)"
    if calibration.task_type == "classification":
        return text  # the output says "Platt-calibrated"
    names = ", ".join(f"`{n}_low`–`{n}_high`" for n in config.task.target_names)
    return text + f"; calibrated 90 % conformal intervals {names}"


def calibration_lines(directory: Path, metrics: dict) -> list[str]:
    """The card's calibration section (body): the method, what it was fitted on, and its test
    measurement from ``metrics.json`` (coverage and mean width per level, overall and per
    domain bin; ECE / Brier before and after for classifiers)."""
    calibration = Calibration.load(directory)
    if calibration is None:
        return [f"{NOT_CALIBRATED[0].upper()}{NOT_CALIBRATED[1:]}."]
    report = metrics.get("calibration", {})
    test = report.get("test", {})
    lines = []
    if calibration.not_calibrated:
        lines += [
            "Not calibrated (no interval, or the raw probability): "
            + "; ".join(f"`{k}` ({v})" for k, v in calibration.not_calibrated.items())
            + ".",
            "",
        ]
    if calibration.task_type == "classification":
        lines.append(
            f"The reported probability is Platt-calibrated: `sigmoid(a · logit(p) + b)` of the "
            f"ensemble's mean probability `p`, fitted on {calibration.n} molecules "
            f"({calibration.fitted_on}); `p` itself is output as `<target>_uncalibrated`."
        )
        for name, entry in calibration.targets.items():
            t = test.get(name)
            lines.append("")
            lines.append(
                f"`{name}`: a = {entry.a:.3f}, b = {entry.b:.3f}."  # type: ignore[union-attr]
            )
            if t:
                lines[-1] += (
                    f" On the test set ({t['n']} molecules): ECE {t['ece_uncalibrated']:.3f} "
                    f"uncalibrated → {t['ece']:.3f} calibrated, Brier score "
                    f"{t['brier_uncalibrated']:.3f} → {t['brier']:.3f} (ECE: 10 equal-width "
                    "probability bins)."
                )
        if not test:
            lines += ["", "Not measured on a test set."]
        return lines
    lines.append(
        "Intervals `<target>_low`–`<target>_high` (`--interval`, default 0.9; any level up to "
        f"{calibration.max_level():.3f}) are split-conformal (crepes), normalised by the ensemble "
        "std (difficulty `std + median calibration std`), with Mondrian bins by applicability "
        "domain and std tercile: a molecule is served by the most specific bin with at least "
        "30 calibration molecules (in/out of domain × std tercile → in/out of domain → std "
        f"tercile → all). Calibrated on {calibration.n} molecules ({calibration.fitted_on}); "
        "bins: "
        + "; ".join(
            f"`{name}`: " + ", ".join(f"{k} {n}" for k, n in t.serving_bins().items())
            for name, t in calibration.targets.items()
            if isinstance(t, ConformalTarget)
        )
        + "."
    )
    novelty = [
        (name, t)
        for name, t in calibration.targets.items()
        if isinstance(t, ConformalTarget) and t.difficulty == "std+novelty"
    ]
    if novelty:
        lines[-1] += (
            " The difficulty is scaled by novelty, `× (1 + β · novelty)` with novelty = 1 − max "
            "Tanimoto similarity to the training set, β chosen on the calibration molecules "
            "(the β whose cross-validated intervals cover their three novelty terciles most "
            "evenly; β = 0: novelty did not help, the std difficulty alone): "
            + ", ".join(f"`{name}` β = {t.beta:g}" for name, t in novelty)
            + "."
        )
    lines += [
        "",
        "Coverage is guaranteed only for molecules drawn like the calibration molecules; "
        "new scaffolds, or a domain the calibration set barely covers, can be covered less "
        "(on a scaffold split the test scaffolds are not the calibration ones).",
    ]
    if not test:
        return [*lines, "", "Coverage not measured on a test set."]
    lines += [
        "",
        "Test-set coverage (fraction of true values inside the interval) and mean width:",
        "",
        "| target | level | molecules | coverage | mean width |",
        "|---|---|---|---|---|",
    ]
    for name, t in test.items():
        for level, r in t.get("levels", {}).items():
            rows = [("all", r)]
            if float(level) == 0.9:  # per domain bin at the default level only
                rows += [(_BIN_LABELS.get(k, k), v) for k, v in r.get("bins", {}).items()]
            for label, v in rows:
                if not v.get("n"):
                    continue
                lines.append(
                    f"| {name} | {float(level):.0%} {label} | {v['n']} | {_pct(v['coverage'])} "
                    f"| {_fmt(v['mean_width'])} |"
                )
        naive = t.get("naive_ensemble_0.9")
        if naive:
            lines.append(
                f"| {name} | naive mean ± 1.645·std, 90 % | {naive['n']} | "
                f"{_pct(naive['coverage'])} | {_fmt(naive['mean_width'])} |"
            )
    return lines


def refresh_card_calibration(directory: str | Path) -> Path | None:
    """Rewrite the calibration section and the version / uncertainty line of an existing
    ``card.md`` (after ``molprop calibrate``); None when the artifact has no card."""
    directory = Path(directory)
    path = artifact_file(directory, CARD_NAME)
    if not path.exists():
        return None
    config = load_config(directory)
    calibration = Calibration.load(directory)
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Version ") and " · " in line:
            head, _, rest = line.partition(" · ")
            rest = rest.split(" · uncertainty: ")[0]
            lines[i] = (
                f"Version {config.version} · {rest} · uncertainty: "
                f"{uncertainty_text(config, calibration)}."
            )
            break
    section = [CALIBRATION_HEADING, "", *calibration_lines(directory, read_metrics(directory)), ""]
    if CALIBRATION_HEADING in lines:
        start = lines.index(CALIBRATION_HEADING)
        end = next(
            (j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines)
        )
        lines[start:end] = section
    else:
        at = lines.index("## Intended use") if "## Intended use" in lines else len(lines)
        lines[at:at] = section
    path.write_text("\n".join(lines))
    return path


# ----------------------------------------------------------------- what the model is


def _is_3d(config: ArtifactConfig) -> bool:
    return config.featurizer.kind == "3d"


def token_text(config: ArtifactConfig) -> str:
    """The members' kind and what their attention runs over: ESA edges or NSA atoms."""
    if config.model.token_kind == "nsa":
        return "NSA members (node set attention: the tokens are the atoms)"
    if _is_3d(config) and _featurizer_3d(config).mode == "bonds":
        return (
            "ESA members (edge set attention: the tokens are the directed bonds, plus directed "
            "non-bonded pairs where the featuriser adds them)"
        )
    if _is_3d(config):
        return (
            "ESA members (edge set attention: the tokens are the radius graph's directed atom "
            "pairs)"
        )
    if config.model.token_scheme == "undirected":
        return "ESA members (edge set attention: the tokens are the bonds, one undirected each)"
    return "ESA members (edge set attention: the tokens are the bonds, two directed edges each)"


def _featurizer_3d(config: ArtifactConfig) -> Any:
    """The 3D featuriser of ``config`` with the parameter defaults of its version."""
    from molprop.featurize import build_featurizer

    return build_featurizer(config.featurizer)


def _cutoff_text(params: dict, periodic: bool | None) -> str:
    from molprop.featurize.graph3d import DEFAULT_CUTOFF_MOLECULE, DEFAULT_CUTOFF_PERIODIC

    if params.get("cutoff") is not None:
        return f"{float(params['cutoff']):g} Å"
    if periodic is None:
        return (
            f"{DEFAULT_CUTOFF_MOLECULE:g} Å for molecules, {DEFAULT_CUTOFF_PERIODIC:g} Å for "
            "periodic systems"
        )
    return f"{DEFAULT_CUTOFF_PERIODIC if periodic else DEFAULT_CUTOFF_MOLECULE:g} Å"


def input_text(config: ArtifactConfig) -> str:
    """The featuriser: 2D RDKit graph (version, stereo) or 3D radius graph (cutoff, periodic)."""
    feat = config.featurizer
    version = feat.resolved_version
    if feat.kind == "2d":
        stereo = (
            "stereo as CIP labels R/S, r/s and E/Z (independent of how the SMILES is written)"
            if version >= 2
            else "stereo as RDKit chiral tags (which depend on the atom order of the SMILES)"
        )
        return (
            f"Input: 2D molecular graph parsed by RDKit: heavy atoms and bonds, featuriser `2d` "
            f"version {version}, {stereo}."
        )
    if feat.kind != "3d":
        return f"Input: featuriser `{feat.kind}` version {version} (parameters {feat.params})."
    f = _featurizer_3d(config)
    periodic = config.provenance.periodic
    if f.mode == "bonds":
        return _bonds_input_text(f, version, _cutoff_text(feat.params, periodic), periodic)
    neighbours = f"at most the {f.max_neighbors} nearest per atom" if f.max_neighbors else "no cap"
    nodes = ["element"]
    nodes += ["OC20 tag"] if f.tags else []
    nodes += ["fixed-atom flag"] if f.fixed else []
    nodes += ["per-atom sum of the distance Gaussians"] if f.atom_gaussians else []
    text = (
        f"Input: 3D radius graph (featuriser `3d` version {version}) of "
        f"{'all atoms' if f.hydrogen_nodes(bonded=False) else 'the heavy atoms'}: edges to every atom within "
        f"a cutoff of {_cutoff_text(feat.params, periodic)} ({neighbours}), distances as "
        f"{f.num_gaussians} Gaussians; atom features: {', '.join(nodes)}."
    )
    if periodic:
        text += (
            " Trained on periodic structures: unit cell with periodic images (exact "
            "minimum-image distances)."
        )
    elif periodic is False:
        text += " Trained on non-periodic molecules."
    return (
        text + f" SMILES are embedded as one ETKDGv3{'/MMFF' if f.mmff else ''} conformer "
        f"(seed {f.seed})."
    )


def _bonds_input_text(f: Any, version: int, cutoff: str, periodic: bool | None) -> str:
    extra = (
        f" and every non-bonded pair closer than {float(f.radius_tokens):g} Å (flagged not a bond)"
        if f.radius_tokens
        else ""
    )
    nodes = ["the RDKit atom features of the 2D featuriser", "element"]
    nodes += ["OC20 tag"] if f.tags else []
    nodes += ["fixed-atom flag"] if f.fixed else []
    nodes += [f"per-atom sum of the distance Gaussians over all atoms within {cutoff}"] * bool(
        f.atom_gaussians
    )
    text = (
        f"Input: 3D molecular graph (featuriser `3d` version {version}, mode `bonds`) of "
        f"{'all atoms' if f.hydrogen_nodes(bonded=True) else 'the heavy atoms'}: tokens are the "
        f"bonds{extra}, each "
        f"with the RDKit bond features of the 2D featuriser and its length as {f.num_gaussians} "
        f"Gaussians (cutoff {cutoff}); atom features: {', '.join(nodes)}. Structures without "
        "bonds (xyz, ASE, pymatgen, SDF) get them from RDKit's rdDetermineBonds; where that "
        "fails (and for periodic systems) the radius graph is used instead"
        + (", with the hydrogens as nodes." if f.hydrogen_nodes(bonded=False) else ".")
    )
    if periodic:
        text += " Trained on periodic structures."
    elif periodic is False:
        text += " Trained on non-periodic molecules."
    return text + (
        f" SMILES are embedded as one ETKDGv3{'/MMFF' if f.mmff else ''} conformer "
        f"(seed {f.seed}) and keep the SMILES's bonds."
    )


def per_target_lines(test: dict, targets: Sequence[str], units: Sequence[str]) -> list[str]:
    """The ensemble's test metrics of each target of a multitask model (``metric/target``
    keys of ``metrics.json``); nothing for a one-target model."""
    ensemble = test.get("ensemble", {})
    if len(targets) < 2:
        return []
    names = [m for m in dict.fromkeys(k.split("/", 1)[0] for k in ensemble if "/" in k)]
    if not names:
        return []
    lines = [
        "Per target (ensemble):",
        "",
        "| target | unit | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for i, target in enumerate(targets):
        unit = units[i] if i < len(units) else ""
        cells = []
        for m in names:
            value = ensemble.get(f"{m}/{target}")
            cells.append("–" if not isinstance(value, (int, float)) else f"{value:.3f}")
        lines.append(f"| `{target}` | {unit} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def provenance_lines(config: ArtifactConfig, root: Path | None) -> list[str]:
    """Fine-tuning provenance and augmentation; empty for a model trained from scratch."""
    prov, aug = config.provenance, config.augment
    lines = []
    if prov.finetuned_from:
        head = {True: "re-initialised", False: "kept from the pretrained model", None: "?"}
        how = (
            f"strategy `{prov.strategy}`, mode `{prov.mode or '?'}`"
            if prov.strategy
            else "`molprop train --init`: its architecture, featuriser, encoder and readout"
        )
        lines.append(
            f"Fine-tuned from the pretrained model `{_shown_path(prov.finetuned_from, root)}` "
            f"({how}, head {head[prov.fresh_head]})."
        )
    if aug is not None and aug.needs_measured:
        cols = ", ".join(f"`{c}`" for c in aug.low_columns)
        lines.append(
            f"Trained on **measured** low-fidelity labels ({cols}) as an extra input: prediction "
            "needs them for every row (`molprop predict --low-column`, "
            "`Predictor.predict(..., low=...)`, the API's `low` field) and refuses without "
            "them; a missing or non-numeric value makes that row `invalid_input`."
        )
    elif aug is not None:
        what = "prediction (label)" if aug.kind == "label" else "graph embedding"
        lines.append(
            f"{'Label' if aug.kind == 'label' else 'Embedding'}-augmented: the pretrained "
            f"model's {what}, {len(aug.mean)} value(s) standardised with training-split "
            "statistics, is appended to the pooled embedding before the head. The pretrained "
            f"model ships inside this artifact (`{aug.source}/`) and always computes these "
            "inputs, never a measured label."
        )
    if config.model.extra_skip:
        lines.append(
            "A linear skip adds `w·x + b` of the low-fidelity input to the output, fitted by "
            "least squares on the training split"
            + (
                " and kept fixed: the network predicts the residual (Δ-learning)."
                if not config.model.extra_to_head
                else "; the model started at that linear fit and trained from there."
            )
        )
    if prov.strategy == "delta-measured":
        lines.append(
            "Its training targets used the **measured** low-fidelity labels of the training "
            "molecules (`high − (a·low + b) + (a'·x + b')`: the network learned the residual of "
            "the measured-label fit); prediction needs no measured label."
        )
    return lines


def limit_lines(config: ArtifactConfig, n_train: object) -> list[str]:
    """What the model cannot see or tell apart (``n_train``: training-set size, if known)."""
    n = f"{n_train} " if isinstance(n_train, int) else "a limited set of "
    if _is_3d(config):
        mirror = (
            "Stereo enters as CIP labels (from the SMILES, or from the 3D geometry for "
            "structures), so enantiomers can differ."
            if _featurizer_3d(config).mode == "bonds"
            else "Distances do not change under a mirror image: enantiomers get the same "
            "prediction."
        )
        return [
            f"- Trained on {n}structures: structures unlike them (other elements, sizes "
            "or bonding) are unreliable (check `uncertainty`).",
            "- 3D model: the prediction depends on the geometry given; from a SMILES it uses one "
            f"conformer, so other conformers can give other values. {mirror}",
        ]
    stereo = (
        "- 2D graph model: stereoisomers are told apart through their CIP labels (R/S, E/Z) "
        "when the SMILES specifies them (unspecified stereo is a class of its own); conformers "
        "are not distinguished."
        if config.featurizer.resolved_version >= 2
        else "- 2D graph model, featuriser version 1: stereo features depend on the atom order "
        "of the SMILES; conformers are not distinguished."
    )
    return [
        f"- Trained on {n}molecules: predictions for metals, large peptides, polymers or "
        "molecules unlike the training set are unreliable (check `in_domain` and "
        "`uncertainty`).",
        stereo,
    ]


def write_card(
    directory: str | Path,
    *,
    title: str,
    data_source: str,
    licence: str,
    intended_use: str,
    reference: str = "",
    reproduce: str = "",
    notes: Sequence[str] = (),
    root: str | Path | None = None,
) -> Path:
    """Write ``card.md`` into the artifact ``directory``.

    ``reproduce``: the command that rebuilds the model (e.g. ``make pretrained``); ``notes``:
    extra bullets under the limits; ``root``: data and model paths inside it are shown
    relative to it (default: the working directory).
    """
    directory = Path(directory)
    root = Path(root) if root is not None else None
    config = load_config(directory)
    metrics = read_metrics(directory)
    task, model, train = config.task, config.model, config.train
    training = metrics.get("training", {})
    unit = ", ".join(u for u in task.units if u) or "(unitless)"
    sizes = training.get("split_sizes") or training.get("sizes") or {}
    split_kind = _SPLITS.get(config.provenance.split_type, "")
    output = (
        f"`{', '.join(task.target_names)}`, the probability of the positive class"
        if task.task_type == "classification"
        else f"`{', '.join(task.target_names)}`, in {unit}"
    )
    if task.former_names:
        output += (
            f" (formerly `{', '.join(task.former_names)}`, the data's column; the old name is "
            "still accepted for a deprecation period)"
        )
    if task.per_atom and task.task_type == "regression":
        output += " (a per-atom target: the model predicts per atom, the output is the total)"
    calibration = Calibration.load(directory)
    if task.task_type == "classification" and calibration is not None:
        output += " (Platt-calibrated)"
    data = config.provenance.data
    shown = f" (`{_shown_path(data, root)}`)" if data and data != _IN_MEMORY_DATA else ""
    if config.provenance.split_type == "scaffold":
        split_text = (
            f"Balanced Bemis–Murcko scaffold split (seed {train.seed}), no scaffold in two parts"
        )
    elif config.provenance.split_type == "random":
        split_text = f"Random split (seed {train.seed})"
    elif config.provenance.split_type == "column":
        split_text = "Split given by a column of the data"
    else:
        split_text = "Split"
    lines = [
        f"# {config.name}: {title}",
        "",
        f"Version {config.version} · {task.task_type} · output: {output} · "
        f"uncertainty: {uncertainty_text(config, calibration)}.",
        "",
        "## Data and licence",
        "",
        f"- Data: {data_source}{shown}.",
        f"- Licence: {licence}.",
    ]
    items = "structures" if _is_3d(config) else "molecules"
    if "n_rows_valid" in training:
        lines.append(
            f"- Rows used: {training['n_rows_valid']} valid, "
            f"{training.get('n_rows_invalid', '?')} rejected "
            f"({'unreadable' if _is_3d(config) else 'unparsable SMILES'})."
        )
    lines += [
        "",
        "## Split",
        "",
        f"{split_text}: train {sizes.get('train', '?')}, validation {sizes.get('val', '?')}, "
        f"test {sizes.get('test', '?')} {items}. "
        + (
            "The validation part is used for early stopping only; the uncertainty is "
            "calibrated on out-of-fold predictions of train + validation (scaffold "
            "cross-validation, see below); the test part is never seen in training or "
            "calibration."
            if calibration is not None and "cross-validation" in calibration.fitted_on
            else "The validation part is used for early stopping and to calibrate the "
            "uncertainty only; the test part is never seen in training or calibration."
        ),
        "",
        "## Model",
        "",
        f"Ensemble of {config.n_members} {token_text(config)}, "
        f"hidden {model.hidden_dim}, {model.heads} heads, layers `{model.layers}`, "
        f"{model.num_seeds} PMA seeds, size path {'on' if model.size_path else 'off'}; "
        f"AdamW lr {train.lr}, batch {train.batch_size}, up to "
        f"{train.epochs} epochs with early stopping (patience {train.patience})."
        + (f" Reproduce with `{reproduce}`." if reproduce else ""),
        "",
        input_text(config),
        "",
        *(line for p in provenance_lines(config, root) for line in (p, "")),
        f"## Test metrics ({split_kind + ' ' if split_kind else ''}test set)",
        "",
    ]
    if "test" in metrics:
        lines += [*metrics_table(metrics["test"], task.task_type), ""]
        lines += per_target_lines(metrics["test"], task.target_names, task.units)
    else:
        lines += ["No test set: no test metrics.", ""]
    if reference:
        lines += [f"Reference: {reference} (published, on a comparable scaffold split).", ""]
    lines += [
        CALIBRATION_HEADING,
        "",
        *calibration_lines(directory, metrics),
        "",
        *percentile_lines(directory),
        "## Intended use",
        "",
        f"{intended_use[0].upper()}{intended_use[1:]}. A screening aid, not a replacement for "
        "measurement; do not use for regulatory or clinical decisions.",
        "",
        "## Applicability domain and limits",
        "",
        *domain_lines(directory, f"{split_kind} test set" if split_kind else "test set"),
        "",
        *limit_lines(config, sizes.get("train")),
        *(f"- {note}" for note in notes),
        "",
    ]
    path = directory / CARD_NAME
    path.write_text("\n".join(lines))
    return path


def write_foundation_card(
    directory: str | Path, *, corpus: dict[str, Any], labels: dict[str, Any], summary: dict
) -> Path:
    """Write ``card.md`` of a foundation (pretrained encoder) artifact: the corpus (sources,
    licences, counts from its manifest), the labels (descriptors kept, scaling, masked values),
    the compute and the size. ``summary`` holds the run's epochs, validation loss, compute
    (``wall_s``, ``cpu_s``, ``molecules_seen``) and parameter count."""
    directory = Path(directory)
    config = load_config(directory)
    model = config.model
    size = sum(p.stat().st_size for p in directory.rglob("*.safetensors"))
    totals = corpus.get("totals", {})
    lines = [
        f"# {config.name}: pretrained ESA encoder (RDKit descriptor regression)",
        "",
        "A starting point, not a property model: `molprop finetune` (without `--from`) and "
        f"`molprop train --init {config.name}` take its encoder and readout and train a new head; "
        "`molprop embed` / `Predictor.embed` give its molecule embeddings. Its own head "
        f"predicts {len(labels.get('names', []))} RDKit 2D descriptors (in their units).",
        "",
        "## Corpus",
        "",
        f"{corpus.get('molecules', '?')} distinct molecules (standardised: largest organic "
        "fragment, neutralised, RDKit canonical SMILES; deduplicated by InChIKey). Read "
        f"{totals.get('rows', '?')} rows: {totals.get('failed', '?')} rejected (listed in the "
        f"corpus's failures.csv), {totals.get('duplicates', '?')} duplicates. RDKit "
        f"{corpus.get('rdkit', '?')}; order seed {corpus.get('seed', '?')}.",
        "",
        "| source | rows | rejected | duplicates | added | licence |",
        "|---|---|---|---|---|---|",
        *(
            f"| {s['name']} | {s['rows']} | {s['failed']} | {s['duplicates']} | {s['added']} "
            f"| {s['licence']} |"
            for s in corpus.get("sources", [])
        ),
        "",
        "No measured property of any molecule is used: the labels are computed.",
        "",
        "## Labels",
        "",
        f"RDKit 2D descriptors of the first {labels.get('n_molecules', '?')} corpus molecules "
        f"(a seeded random subset): {labels.get('n_descriptors', '?')} computed, "
        f"{len(labels.get('dropped', {}))} dropped (constant or mostly non-finite), "
        f"{len(labels.get('names', []))} kept; robust scaling (x - median) / IQR (standard "
        f"deviation where the IQR is 0), clipped to ±{labels.get('clip', '?')}; "
        f"{labels.get('n_masked_values', '?')} NaN / infinite values masked out of the loss; "
        f"{labels.get('n_failed', '?')} molecules failed in descriptor code (listed).",
        "",
        "## Training and compute",
        "",
        f"{token_text(config)}, hidden {model.hidden_dim}, {model.heads} heads, layers "
        f"`{model.layers}`, {model.num_seeds} PMA seeds; masked mean squared error on the "
        f"scaled descriptors, AdamW lr {config.train.lr}, batch {config.train.batch_size}. "
        f"{summary.get('train_molecules', '?')} training / {summary.get('val_molecules', '?')} "
        f"validation molecules; {summary.get('epochs_run', '?')} epoch(s) started, "
        f"{summary.get('global_step', '?')} optimiser steps, "
        f"{summary.get('molecules_seen', '?')} molecules seen; validation loss (scaled "
        f"descriptors, MSE) {_fmt(summary.get('val_loss'))}, MAE {_fmt(summary.get('val_mae'))}.",
        f"Compute: {_fmt(summary.get('wall_s', 0) / 3600)} h training wall time, "
        f"{_fmt(summary.get('cpu_s', 0) / 3600)} CPU hours (rank 0).",
        "",
        input_text(config),
        "",
        "## Size",
        "",
        f"{summary.get('parameters', '?')} parameters, {size / 1e6:.2f} MB of safetensors.",
        "",
        "## Intended use and limits",
        "",
        "- Start fine-tuning or new 2D molecular tasks from it; its descriptor predictions are "
        "a pretraining target, not validated properties.",
        "- Drug-like / lead-like organic molecules (MOSES, ZINC-derived) plus small molecules "
        "of the shared data sets; organic elements only, no metals.",
        "",
    ]
    path = directory / CARD_NAME
    path.write_text("\n".join(lines))
    return path
