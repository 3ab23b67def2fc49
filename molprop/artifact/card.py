"""Model cards: ``card.md`` rendered from what the artifact holds with the Jinja2 templates of
``molprop/artifact/templates/``: ``card.md.j2`` (a model), ``foundation_card.md.j2`` (a
pretrained encoder) and the sections they share, ``card_macros.md.j2``.

Every number and every statement about the model is read from the artifact (nothing is typed by
hand): the token kind (ESA or NSA), the input (2D RDKit graph and its featuriser version, or 3D
radius graph with its cutoff, periodic or not), per-atom targets, where a fine-tuned model came
from and what augments it. The card is rewritten whenever the model is retrained. This module
renders; :class:`molprop.artifact.Artifact` reads the artifact's files and writes the card
(``Artifact.write_card``, ``write_foundation_card``, ``refresh_card_calibration``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from molprop.artifact.calibration import NOT_CALIBRATED, Calibration, ConformalTarget
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.domain import ApplicabilityDomain
from molprop.artifact.reference import Reference

if TYPE_CHECKING:
    import jinja2

#: what ``Provenance.data`` holds when the training table was passed as a DataFrame
IN_MEMORY_DATA = "<DataFrame>"
CALIBRATION_HEADING = "## Uncertainty and calibration"
#: the card's section after the calibration (a card without one gets it inserted before)
INTENDED_USE_HEADING = "## Intended use"


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _pct(value: object) -> str:
    return f"{100 * value:.1f} %" if isinstance(value, float) else "?"


def _novelty_scaled(target: object) -> bool:
    return isinstance(target, ConformalTarget) and target.difficulty == "std+novelty"


@functools.cache
def templates() -> jinja2.Environment:
    """The card templates (jinja2 is imported when the first card is rendered)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("molprop.artifact", "templates"),
        autoescape=False,  # markdown, not HTML: the service renders cards through markdown-it
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["num"] = _fmt  # floats to 3 decimals, anything else as it is
    env.filters["pct"] = _pct  # a fraction as a percentage with one decimal ("?" if unknown)
    env.tests["conformal"] = lambda target: isinstance(target, ConformalTarget)
    env.tests["novelty_scaled"] = _novelty_scaled
    return env


@dataclass(frozen=True)
class CardTexts:
    """What a model's card says that its files do not hold, from whoever writes the card:
    ``title``, ``data_source``, ``licence``, ``intended_use``; ``reference``: a published
    result to compare with; ``reproduce``: the command that rebuilds the model (e.g. ``make
    pretrained``); ``notes``: extra bullets under the limits; ``root``: data and model paths
    inside it are shown relative to it (default: the working directory)."""

    title: str
    data_source: str
    licence: str
    intended_use: str
    reference: str = ""
    reproduce: str = ""
    notes: Sequence[str] = ()
    root: str | Path | None = None


def _shown_path(path: str, root: Path | None) -> str:
    """``path`` relative to ``root`` (default: the working directory) when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to((root or Path.cwd()).resolve()))
    except ValueError:
        return path


def _featurizer_3d(config: ArtifactConfig) -> Any:
    """The 3D featuriser of ``config`` with the parameter defaults of its version (None for
    other featurisers)."""
    if config.featurizer.kind != "3d":
        return None
    from molprop.featurize import build_featurizer

    return build_featurizer(config.featurizer)


def _cutoff_text(config: ArtifactConfig) -> str:
    """The 3D featuriser's cutoff: as set, else the default for what the model was trained on
    (both defaults when that is not recorded)."""
    if config.featurizer.kind != "3d":
        return ""
    from molprop.featurize.graph3d import DEFAULT_CUTOFF_MOLECULE, DEFAULT_CUTOFF_PERIODIC

    params, periodic = config.featurizer.params, config.provenance.periodic
    if params.get("cutoff") is not None:
        return f"{float(params['cutoff']):g} Å"
    if periodic is None:
        return (
            f"{DEFAULT_CUTOFF_MOLECULE:g} Å for molecules, {DEFAULT_CUTOFF_PERIODIC:g} Å for "
            "periodic systems"
        )
    return f"{DEFAULT_CUTOFF_PERIODIC if periodic else DEFAULT_CUTOFF_MOLECULE:g} Å"


def _render(template: str, config: ArtifactConfig, **context: Any) -> str:
    """``template`` rendered for the model ``config`` (with its 3D featuriser, ``f3d``, and
    cutoff text) and ``context``."""
    return (
        templates()
        .get_template(template)
        .render(config=config, f3d=_featurizer_3d(config), cutoff=_cutoff_text(config), **context)
    )


def per_target_metrics(test: Mapping[str, Any], targets: Sequence[str]) -> list[str]:
    """The metrics a multitask model's ``metrics.json`` gives per target (``metric/target`` keys
    of the test ensemble), in their order; none for a one-target model."""
    if len(targets) < 2:
        return []
    keys = test.get("ensemble", {})
    return list(dict.fromkeys(k.split("/", 1)[0] for k in keys if "/" in k))


def model_card(
    config: ArtifactConfig,
    metrics: Mapping[str, Any],
    calibration: Calibration | None,
    domain: ApplicabilityDomain | None,
    test_smiles: Sequence[str] | None,
    percentiles: Reference | None,
    texts: CardTexts,
) -> str:
    """The text of a model's ``card.md`` (``card.md.j2``).

    ``test_smiles``: the test part of the training split (the card says how much of it is in
    the domain; None or empty: not said); ``percentiles``: the stored reference of
    ``<target>_percentile``; ``texts``: what the caller says (:class:`CardTexts`).
    """
    root = Path(texts.root) if texts.root is not None else None
    prov = config.provenance
    test_in_domain = None
    if domain is not None and test_smiles:
        test_in_domain = float(domain.in_domain(list(test_smiles)).mean())
    data = prov.data
    said = {f.name: getattr(texts, f.name) for f in dataclasses.fields(texts) if f.name != "root"}
    return _render(
        "card.md.j2",
        config,
        metrics=metrics,
        calibration=calibration,
        domain=domain,
        test_in_domain=test_in_domain,
        percentiles=percentiles,
        data_shown=_shown_path(data, root) if data and data != IN_MEMORY_DATA else "",
        finetuned_from_shown=_shown_path(prov.finetuned_from, root),
        per_target_metrics=per_target_metrics(metrics.get("test", {}), config.task.target_names),
        not_calibrated=NOT_CALIBRATED,
        **said,
    )


def foundation_card(
    config: ArtifactConfig,
    size_bytes: int,
    *,
    corpus: Mapping[str, Any],
    labels: Mapping[str, Any],
    summary: Mapping[str, Any],
) -> str:
    """The text of a foundation (pretrained encoder) model's ``card.md``
    (``foundation_card.md.j2``): ``corpus`` its manifest, ``labels`` its labels' metadata,
    ``summary`` the run's epochs, validation loss, compute (``wall_s``, ``cpu_s``,
    ``molecules_seen``) and parameter count; ``size_bytes`` of its safetensors."""
    return _render(
        "foundation_card.md.j2",
        config,
        size_bytes=size_bytes,
        corpus=corpus,
        labels=labels,
        summary=summary,
    )


def uncertainty_text(config: ArtifactConfig, calibration: Calibration | None) -> str:
    """The card's first line's end: what the uncertainty and the output are."""
    macros = templates().get_template("card_macros.md.j2").module
    return str(macros.uncertainty(config, calibration))  # type: ignore[attr-defined]


def calibration_lines(calibration: Calibration | None, metrics: Mapping[str, Any]) -> list[str]:
    """The body of the card's calibration section, one line per entry: the method, what it was
    fitted on, and its test measurement from ``metrics.json``."""
    macros = templates().get_template("card_macros.md.j2").module
    text = str(macros.calibration_section(calibration, metrics, NOT_CALIBRATED))  # type: ignore[attr-defined]
    return text.removesuffix("\n").split("\n")


def refresh_calibration(
    card: str,
    config: ArtifactConfig,
    calibration: Calibration | None,
    metrics: Mapping[str, Any],
) -> str:
    """``card`` with its calibration section and the version / uncertainty line rewritten
    (after ``molprop calibrate``); a card without the section gets it before its intended
    use (or at its end)."""
    lines = card.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Version ") and " · " in line:
            _, _, rest = line.partition(" · ")
            rest = rest.split(" · uncertainty: ")[0]
            lines[i] = (
                f"Version {config.version} · {rest} · uncertainty: "
                f"{uncertainty_text(config, calibration)}."
            )
            break
    section = [CALIBRATION_HEADING, "", *calibration_lines(calibration, metrics), ""]
    if CALIBRATION_HEADING in lines:
        start = lines.index(CALIBRATION_HEADING)
        end = next(
            (j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines)
        )
        lines[start:end] = section
    else:
        at = lines.index(INTENDED_USE_HEADING) if INTENDED_USE_HEADING in lines else len(lines)
        lines[at:at] = section
    return "\n".join(lines)


__all__ = [
    "CALIBRATION_HEADING",
    "CardTexts",
    "calibration_lines",
    "foundation_card",
    "model_card",
    "per_target_metrics",
    "refresh_calibration",
    "templates",
    "uncertainty_text",
]
