"""Atom attributions: which atoms drive a prediction (Integrated Gradients, Captum).

For each molecule and each ensemble member, :class:`captum.attr.IntegratedGradients` integrates
the gradient of the member's output along the straight path from a baseline to the molecule's
tokens at the model's token-embedding layer (``SetEncoder.embed``). The path's values are
injected into that layer by a hook, so the rest of the model (masks, readout, size path, extra
inputs of transfer models) runs as in prediction. Two places on that layer can be integrated:

* ``layer="input"`` (default): the layer's *input*, the token features. ESA tokens are
  ``[x_src | x_dst | bond features | self-loop flag]``: the score of the ``x_src`` block goes to
  the source atom, the ``x_dst`` block to the destination atom, and the bond block and flag half
  to each end; NSA tokens are atom features (each token's score is its atom's). Baseline: every
  token feature zero. This resolves an edge token onto the atom whose features drive it (a model
  counting nitrogens puts its weight on the nitrogens, not on their carbon neighbours).
* ``layer="embedding"``: the layer's *output*, the token embeddings, baseline all zero; an ESA
  token's score (summed over its embedding) is split half to each end, NSA per atom. An edge
  token cannot say which of its atoms matters, so a bond's two atoms always share its score
  (ESA models trained to count nitrogens, as in ``tests/unit/inference/test_explain.py``: 54-84 %
  of the positive mass on N atoms with this layer over the runs measured, single molecules
  down to 48 %; 99.9 % with ``input``). Its path also starts where the blocks' LayerNorms are
  singular (all-zero states), so it needs many more steps: 128-512, and still missed 1 % on
  some molecules, where ``input`` holds completeness to ~1e-5 with 64.

Isolated atoms' self-loop tokens (``nn.edge_sets``) go wholly to their atom.

What is attributed: regression, the prediction in target units (the scaler is linear, so
member attributions of the standardised output times the target's std; per-atom targets times
the atom count); classification, the **logit** (completeness holds for the logit, not for the
probability). Ensembles: every member is attributed and the weights averaged, so the weights sum
to (mean prediction - mean baseline prediction). Completeness: Captum's convergence delta
``sum(weights) - (prediction - baseline)`` (the members' mean); each member's ``n_steps``
doubles (up to ``max_steps``) until its ``|delta| <= RTOL / 2 * |prediction - baseline| + ATOL``,
and ``Explanation.complete`` says whether the ensemble's holds ``RTOL`` (1 %).

Only models with the 2D featuriser are explained: their graph nodes are the atoms of the parsed
SMILES, in order (a 3D model's nodes include hydrogens in canonical order).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
import pandas as pd
import torch
from captum.attr import IntegratedGradients
from rdkit import Chem
from rdkit.Chem import Draw
from rdkit.Chem.Draw import SimilarityMaps, rdMolDraw2D

from molprop.artifact.config import ArtifactConfig
from molprop.chem.smiles import MAX_SMILES_LENGTH, parse_smiles, smiles_length_limit
from molprop.chem.standardize import standardize
from molprop.data.batch import GraphBatch, collate_graphs
from molprop.errors import ConfigError, InvalidInputError, PredictionCancelled
from molprop.graph import MolGraph
from molprop.inference.rows import STATUS_ERROR, STATUS_OK, failure_status
from molprop.inference.screen import ScreenedFeaturizer, WorkLimits
from molprop.io.table import featurize_rows
from molprop.models.model import MolPropModel
from molprop.models.predict import default_device

log = logging.getLogger(__name__)

ExplainLayer = Literal["input", "embedding"]
EXPLAIN_LAYERS: tuple[str, ...] = ("input", "embedding")

#: Integration steps to start with (Gauss-Legendre); doubled until completeness holds.
DEFAULT_STEPS = 64
#: Most integration steps per member and molecule.
MAX_STEPS = 512
#: Completeness tolerance: ``|delta| <= RTOL * |prediction - baseline| + ATOL``.
RTOL = 0.01
ATOL = 1e-4
#: Padded tokens of one forward pass over interpolation steps (copies of one molecule).
STEP_TOKENS = 8192


class Explainable(Protocol):
    """What explaining takes from a loaded model (a :class:`molprop.inference.Predictor`, whose
    ``explain`` calls :func:`explain` with itself): its artifact's directory and config, its
    ensemble members, its featuriser and the screened one (standardisation, element checks),
    and its own predictions and augmented inputs. Typed by what it offers, so that this module
    needs nothing of the predictor's."""

    @property
    def directory(self) -> Path: ...

    @property
    def config(self) -> ArtifactConfig: ...

    @property
    def members(self) -> Sequence[MolPropModel]: ...

    @property
    def featurizer(self) -> Callable[[Chem.Mol], MolGraph]: ...

    @property
    def screened(self) -> ScreenedFeaturizer: ...

    @property
    def target_names(self) -> list[str]: ...

    def augment_features(self, graphs: Sequence[MolGraph]) -> np.ndarray | None: ...

    def predict_graphs(
        self,
        items: Sequence[MolGraph | Exception],
        batch_size: int = 256,
        device: torch.device | None = None,
    ) -> pd.DataFrame: ...


@dataclass(frozen=True)
class AtomWeight:
    """One atom's attribution: RDKit atom index (of the parsed SMILES), element, weight."""

    index: int
    element: str
    weight: float


@dataclass(frozen=True)
class Explanation:
    """The attribution of one input row. ``status``/``error`` as in prediction rows
    (:mod:`molprop.inference.rows`); when not ``ok`` the numbers are None and the atoms empty.

    ``weights[k]`` belongs to atom ``atom_indices[k]`` (element ``elements[k]``); they sum to
    ``prediction - baseline`` up to ``delta``. ``prediction`` and ``baseline`` are in
    ``space`` (``"target"``: target units; ``"logit"``: classifier logit), means over the
    members; ``value`` is what :meth:`Predictor.predict` reports (target units or probability).
    ``complete``: ``|delta| <= RTOL * |prediction - baseline| + ATOL``; ``n_steps``: the most
    integration steps a member needed.

    ``smiles``: the molecule explained, whose atoms the indices number: the input, or the
    standardised molecule where the chemistry checks of prediction changed it (largest organic
    fragment, neutralised; :mod:`molprop.chem.standardize`), as :meth:`Predictor.predict`
    reads it."""

    smiles: str
    status: str
    error: str | None = None
    target: str = ""
    space: str = ""
    layer: str = ""
    atom_indices: tuple[int, ...] = ()
    elements: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()
    value: float | None = None
    prediction: float | None = None
    baseline: float | None = None
    delta: float | None = None
    complete: bool | None = None
    n_steps: int = 0
    n_members: int = 0

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    @property
    def atoms(self) -> list[AtomWeight]:
        return [
            AtomWeight(i, e, w)
            for i, e, w in zip(self.atom_indices, self.elements, self.weights, strict=True)
        ]

    @property
    def relative_delta(self) -> float | None:
        """``|delta| / |prediction - baseline|`` (None when not ok or the difference is 0)."""
        if self.delta is None or self.prediction is None or self.baseline is None:
            return None
        diff = abs(self.prediction - self.baseline)
        return abs(self.delta) / diff if diff > 0 else None

    def svg(self, size: tuple[int, int] = (400, 300)) -> str:
        """RDKit similarity map of the weights (green positive, pink negative) as SVG text;
        a failed row gives an empty string."""
        if not self.ok:
            return ""
        return similarity_map(self.smiles, self.weights, size, "svg")  # type: ignore[return-value]

    def png(self, size: tuple[int, int] = (400, 300)) -> bytes:
        """The similarity map as PNG bytes (b"" for a failed row)."""
        if not self.ok:
            return b""
        return similarity_map(self.smiles, self.weights, size, "png")  # type: ignore[return-value]


# --------------------------------------------------------------------------- token -> atoms


def token_endpoints(graph: MolGraph, token_kind: str) -> np.ndarray:
    """(L, 2) the two atoms of every token, in the token order of ``nn.edge_sets`` for a batch
    holding only ``graph``: ESA directed edges then one self-loop per isolated atom; NSA one
    token per atom (both ends the atom)."""
    if token_kind == "nsa":
        atoms = np.arange(graph.n_nodes)
        return np.stack([atoms, atoms], axis=1)
    src, dst = graph.edge_index
    degree = np.bincount(np.concatenate([src, dst]), minlength=graph.n_nodes)
    lonely = np.flatnonzero(degree == 0)
    return np.stack([np.concatenate([src, lonely]), np.concatenate([dst, lonely])], axis=1)


def atom_weights(
    token_attr: np.ndarray,
    endpoints: np.ndarray,
    n_atoms: int,
    token_kind: str,
    layer: str,
    node_dim: int,
) -> np.ndarray:
    """Per-token attributions (L, F) -> per-atom weights (n_atoms,) as the module docstring
    says; their sum is the sum of ``token_attr``. ``node_dim``: width of an atom's features
    (the ``x_src`` and ``x_dst`` blocks of an ESA token's input)."""
    src, dst = endpoints[:, 0], endpoints[:, 1]
    out = np.zeros(n_atoms, dtype=np.float64)
    if token_kind == "nsa":  # one token per atom: src == dst
        np.add.at(out, src, token_attr.sum(axis=1))
        return out
    if layer == "embedding":  # a token's embedding belongs to the bond: half to each end
        half = 0.5 * token_attr.sum(axis=1)
        np.add.at(out, src, half)
        np.add.at(out, dst, half)
        return out
    bond = 0.5 * token_attr[:, 2 * node_dim :].sum(axis=1)  # bond features + self-loop flag
    np.add.at(out, src, token_attr[:, :node_dim].sum(axis=1) + bond)
    np.add.at(out, dst, token_attr[:, node_dim : 2 * node_dim].sum(axis=1) + bond)
    return out


# --------------------------------------------------------------------------- one member


class _Injected:
    """Forward function for Captum: (S, L, F) values at the explained layer -> (S,) outputs of
    ``member`` for S copies of one molecule, the values put in by a hook on ``encoder.embed``."""

    def __init__(
        self,
        member: MolPropModel,
        graph: MolGraph,
        extra: np.ndarray | None,
        column: int,
        scale: float,
        layer: str,
        device: torch.device,
    ) -> None:
        self.member, self.graph, self.extra = member, graph, extra
        self.column, self.scale, self.layer, self.device = column, scale, layer, device
        self._batches: dict[int, GraphBatch] = {}  # by number of copies (few sizes per call)
        self.values: torch.Tensor | None = None

    def batch(self, copies: int) -> GraphBatch:
        if copies not in self._batches:
            extra = None if self.extra is None else np.repeat(self.extra[None], copies, axis=0)
            batch = collate_graphs([self.graph] * copies, extra=extra)
            self._batches[copies] = batch.to(self.device)
        return self._batches[copies]

    def _pre_hook(self, module, args):
        values = self.values
        assert values is not None
        flat = values.reshape(-1, values.shape[-1])
        if flat.shape != args[0].shape:
            raise RuntimeError(f"token inputs {tuple(args[0].shape)} != {tuple(flat.shape)}")
        return (flat.to(args[0].dtype),)

    def _hook(self, module, args, output):
        values = self.values
        assert values is not None
        flat = values.reshape(-1, values.shape[-1])
        if flat.shape != output.shape:
            raise RuntimeError(f"token embeddings {tuple(output.shape)} != {tuple(flat.shape)}")
        return flat.to(output.dtype)

    def __call__(self, values: torch.Tensor) -> torch.Tensor:
        embed = self.member.encoder.embed
        if self.layer == "input":
            handle = embed.register_forward_pre_hook(self._pre_hook)
        else:
            handle = embed.register_forward_hook(self._hook)
        self.values = values
        try:
            out = self.member(self.batch(values.shape[0]))[:, self.column]
        finally:
            handle.remove()
            self.values = None
        return out * self.scale

    def actual(self) -> torch.Tensor:
        """(1, L, F) the molecule's own values at the explained layer."""
        seen: list[torch.Tensor] = []
        embed = self.member.encoder.embed
        if self.layer == "input":
            handle = embed.register_forward_pre_hook(lambda m, a: seen.append(a[0].detach()))
        else:
            handle = embed.register_forward_hook(lambda m, a, o: seen.append(o.detach()))
        try:
            with torch.no_grad():
                self.member(self.batch(1))
        finally:
            handle.remove()
        return seen[0][None]


@dataclass(frozen=True)
class MemberAttribution:
    """One member's Integrated Gradients for one molecule: per-token, per-channel attributions
    (L, F) at the explained layer, the output at the molecule and at the baseline (explained
    units), Captum's convergence delta and the steps used."""

    token_attr: np.ndarray
    prediction: float
    baseline: float
    delta: float
    n_steps: int

    def within(self, rtol: float = RTOL, atol: float = ATOL) -> bool:
        """``|delta| <= rtol * |prediction - baseline| + atol``."""
        return abs(self.delta) <= rtol * abs(self.prediction - self.baseline) + atol


def attribute_member(
    member: MolPropModel,
    graph: MolGraph,
    *,
    column: int = 0,
    scale: float = 1.0,
    extra: np.ndarray | None = None,
    layer: str = "input",
    n_steps: int = DEFAULT_STEPS,
    max_steps: int = MAX_STEPS,
    device: torch.device | None = None,
) -> MemberAttribution:
    """Integrated Gradients of ``member``'s output ``column`` (times ``scale``) for ``graph``
    at ``layer`` of its token embedding, baseline zero; ``n_steps`` doubles up to ``max_steps``
    until ``|delta| <= RTOL / 2 * |prediction - baseline| + ATOL`` (half the tolerance, so the
    ensemble mean holds it too). Hooks are put on ``member`` while it runs: pass a private copy
    (:func:`explainable_copy`) when other threads may use the model."""
    if layer not in EXPLAIN_LAYERS:
        raise ConfigError(f"layer must be one of {EXPLAIN_LAYERS}, got {layer!r}")
    device = device or default_device()
    member = member.to(device).eval()
    token_kind = member.encoder.token_kind
    fn = _Injected(member, graph, extra, column, scale, layer, device)
    inputs = fn.actual()
    n_tokens, width = inputs.shape[1], inputs.shape[2]
    if n_tokens != len(token_endpoints(graph, token_kind)):
        raise RuntimeError(f"{n_tokens} tokens, expected {len(token_endpoints(graph, token_kind))}")
    node_dim = graph.x.shape[1]
    if token_kind == "esa" and layer == "input" and width < 2 * node_dim + 1:
        raise RuntimeError(f"ESA token width {width} < 2 x {node_dim} + 1")
    baselines = torch.zeros_like(inputs)
    ig = IntegratedGradients(fn)
    with torch.no_grad():
        prediction = float(fn(inputs)[0])
        baseline = float(fn(baselines)[0])
    steps = max(2, int(n_steps))
    while True:
        internal = max(1, min(steps, STEP_TOKENS // max(1, n_tokens)))
        with torch.enable_grad():
            attr, delta = ig.attribute(
                inputs,
                baselines=baselines,
                n_steps=steps,
                method="gausslegendre",
                internal_batch_size=internal,
                return_convergence_delta=True,
            )
        scores = attr[0].detach().double().cpu().numpy()  # (L, F)
        result = MemberAttribution(scores, prediction, baseline, float(delta.sum()), steps)
        if result.within(RTOL / 2) or steps >= max_steps:
            return result
        steps = min(2 * steps, max_steps)


def explainable_copy(member: MolPropModel) -> MolPropModel:
    """A private copy of ``member`` (eval mode, parameters frozen) for :func:`attribute_member`:
    its hooks then never touch a model that other threads predict with (the service)."""
    clone = copy.deepcopy(member).eval()
    for param in clone.parameters():
        param.requires_grad_(False)
    return clone


# --------------------------------------------------------------------------- molecules


def _target_column(predictor: Explainable, target: str | None) -> tuple[int, str]:
    names = predictor.target_names
    if target is None:
        return 0, names[0]
    target = predictor.config.task.resolve_target(target)
    return names.index(target), target


def explain_graph(
    predictor: Explainable,
    graph: MolGraph,
    mol: Chem.Mol,
    smiles: str,
    *,
    members: Sequence[MolPropModel],
    column: int,
    target: str,
    layer: str = "input",
    n_steps: int = DEFAULT_STEPS,
    max_steps: int = MAX_STEPS,
    device: torch.device | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Explanation:
    """Attribute each of ``members`` (``predictor``'s, as :func:`explainable_copy`) for one
    featurised molecule and average."""
    task = predictor.config.task
    classification = task.task_type == "classification"
    scale = 1.0 if classification else float(task.scaler.std[column])
    shift = 0.0 if classification else float(task.scaler.mean[column])
    if task.per_atom and not classification:
        scale, shift = scale * graph.n_nodes, shift * graph.n_nodes
    extra = predictor.augment_features([graph])
    extra_row = None if extra is None else np.asarray(extra[0])
    token_kind = predictor.config.model.token_kind
    endpoints = token_endpoints(graph, token_kind)
    node_dim = graph.x.shape[1]
    per_member = []
    for member in members:
        if should_stop is not None and should_stop():
            raise PredictionCancelled("explanation stopped")
        res = attribute_member(
            member,
            graph,
            column=column,
            scale=scale,
            extra=extra_row,
            layer=layer,
            n_steps=n_steps,
            max_steps=max_steps,
            device=device,
        )
        weights = atom_weights(
            res.token_attr, endpoints, graph.n_nodes, token_kind, layer, node_dim
        )
        per_member.append((res, weights))
    weights = np.mean([w for _, w in per_member], axis=0)
    pred = float(np.mean([r.prediction for r, _ in per_member]))
    base = float(np.mean([r.baseline for r, _ in per_member]))
    delta = float(np.mean([r.delta for r, _ in per_member]))
    pred_out, base_out = pred + shift, base + shift  # target units (shift 0 for a logit)
    # what predict reports (a classifier's probability calibrated when the artifact is)
    value = float(predictor.predict_graphs([graph], device=device)[target].iloc[0])
    if not (np.isfinite(weights).all() and math.isfinite(value) and math.isfinite(delta)):
        return Explanation(smiles, STATUS_ERROR, "model produced a non-finite attribution")
    return Explanation(
        smiles=smiles,
        status=STATUS_OK,
        target=target,
        space="logit" if classification else "target",
        layer=layer,
        atom_indices=tuple(range(mol.GetNumAtoms())),
        elements=tuple(a.GetSymbol() for a in mol.GetAtoms()),
        weights=tuple(float(w) for w in weights),
        value=value,
        prediction=pred_out,
        baseline=base_out,
        delta=delta,
        complete=abs(delta) <= RTOL * abs(pred - base) + ATOL,
        n_steps=max(r.n_steps for r, _ in per_member),
        n_members=len(per_member),
    )


def explain(
    predictor: Explainable,
    smiles: Sequence[str] | str,
    *,
    target: str | None = None,
    layer: ExplainLayer = "input",
    n_steps: int = DEFAULT_STEPS,
    max_steps: int = MAX_STEPS,
    max_heavy_atoms: int | None = None,
    max_smiles_length: int | None = None,
    device: torch.device | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[Explanation]:
    """One :class:`Explanation` per SMILES, in order; a bad SMILES (or one over
    ``max_heavy_atoms`` / ``max_smiles_length``) is its row's ``invalid_input``, a model failure
    its row's ``error``, never an exception. Raises :class:`ConfigError` for a model that cannot
    be explained (3D featuriser), an unknown ``target`` or ``layer``; ``should_stop``: asked
    before every molecule and member (then :class:`PredictionCancelled`)."""
    if predictor.config.model.token_scheme != "directed":
        raise ConfigError(
            "explanations need directed edge tokens ([x_src | x_dst | bond]); this model has "
            f"{predictor.config.model.token_scheme!r} bond tokens"
        )
    if predictor.config.featurizer.kind != "2d":
        raise ConfigError(
            f"explanations need a model with the 2D featuriser; {predictor.directory} uses "
            f"{predictor.config.featurizer.kind!r} (its graph nodes are not the SMILES atoms)"
        )
    if layer not in EXPLAIN_LAYERS:
        raise ConfigError(f"layer must be one of {EXPLAIN_LAYERS}, got {layer!r}")
    column, name = _target_column(predictor, target)
    rows = [smiles] if isinstance(smiles, str) else list(smiles)
    length = MAX_SMILES_LENGTH if max_smiles_length is None else max_smiles_length
    limits = WorkLimits(max_smiles_length, max_heavy_atoms)

    def parse(smi: object) -> tuple[Chem.Mol, MolGraph, str]:
        mol = parse_smiles(smi, max_length=length)
        too_large = limits.size_refusal(mol.GetNumHeavyAtoms())
        if too_large is not None:
            raise InvalidInputError(too_large)
        text = smi if isinstance(smi, str) else str(smi)
        result = standardize(mol, predictor.screened.elements)  # unsupported: raises
        if result.changed:  # explain the molecule prediction reads, atoms numbered as in it
            text = result.smiles
            mol = parse_smiles(text, max_length=max(len(text), 1))
        graph = predictor.featurizer(mol)
        if graph.n_nodes != mol.GetNumAtoms():  # the featuriser's nodes are the atoms
            raise RuntimeError(f"{graph.n_nodes} graph nodes for {mol.GetNumAtoms()} atoms")
        return mol, graph, text

    with smiles_length_limit(length):
        items = featurize_rows(rows, parse)
    if should_stop is not None and should_stop():
        raise PredictionCancelled("explanation stopped after featurising")
    members = [explainable_copy(m) for m in predictor.members]
    out = []
    for smi, item in zip(rows, items, strict=True):
        text = smi if isinstance(smi, str) else str(smi)
        if isinstance(item, Exception):
            out.append(Explanation(text, failure_status(item), str(item)))
            continue
        mol, graph, read = item
        try:
            out.append(
                explain_graph(
                    predictor,
                    graph,
                    mol,
                    read,
                    members=members,
                    column=column,
                    target=name,
                    layer=layer,
                    n_steps=n_steps,
                    max_steps=max_steps,
                    device=device,
                    should_stop=should_stop,
                )
            )
        except PredictionCancelled:
            raise
        except Exception as exc:  # a model failure is reported per row, never raised
            log.exception("explanation failed")
            out.append(Explanation(text, STATUS_ERROR, f"{type(exc).__name__}: {exc}"))
    return out


# --------------------------------------------------------------------------- tables, pictures


ATOM_COLUMNS = ["molecule", "smiles", "atom_index", "element", "weight"]
MOLECULE_COLUMNS = [
    "molecule",
    "smiles",
    "status",
    "error",
    "target",
    "space",
    "value",
    "prediction",
    "baseline",
    "sum_weights",
    "delta",
    "complete",
    "n_steps",
]


def atoms_frame(explanations: Sequence[Explanation]) -> pd.DataFrame:
    """One row per atom of every ok explanation: molecule (input row), smiles, atom_index,
    element, weight."""
    rows = [
        (k, e.smiles, a.index, a.element, a.weight)
        for k, e in enumerate(explanations)
        for a in e.atoms
    ]
    return pd.DataFrame(rows, columns=ATOM_COLUMNS)


def molecules_frame(explanations: Sequence[Explanation]) -> pd.DataFrame:
    """One row per input row: status, error and the completeness numbers."""
    rows = [
        (
            k,
            e.smiles,
            e.status,
            e.error or "",
            e.target,
            e.space,
            e.value,
            e.prediction,
            e.baseline,
            float(sum(e.weights)) if e.ok else None,
            e.delta,
            e.complete,
            e.n_steps,
        )
        for k, e in enumerate(explanations)
    ]
    return pd.DataFrame(rows, columns=MOLECULE_COLUMNS)


def similarity_map(
    smiles: str, weights: Sequence[float], size: tuple[int, int] = (400, 300), fmt: str = "svg"
) -> str | bytes:
    """RDKit similarity map (``SimilarityMaps.GetSimilarityMapFromWeights`` on a
    ``MolDraw2DSVG`` / ``MolDraw2DCairo``) of per-atom ``weights`` for ``smiles``: SVG text or
    PNG bytes. A one-atom molecule (no map possible) is drawn plain. The SVG's contour grid is
    coarser (0.2 vs 0.1, cells under 5 % of the largest weight not filled): RDKit writes one
    path per grid cell, ~1 MB for caffeine at 0.1, ~0.2 MB so."""
    mol = parse_smiles(smiles, max_length=max(len(smiles), 1))
    if len(weights) != mol.GetNumAtoms():
        raise ValueError(f"{len(weights)} weights for {mol.GetNumAtoms()} atoms")
    width, height = size
    drawer = (
        rdMolDraw2D.MolDraw2DSVG(width, height)
        if fmt == "svg"
        else rdMolDraw2D.MolDraw2DCairo(width, height)
    )
    values = [float(w) for w in weights]
    if mol.GetNumAtoms() >= 2 and any(v != 0.0 for v in values):
        SimilarityMaps.GetSimilarityMapFromWeights(
            mol,
            values,
            draw2d=drawer,
            gridResolution=0.2 if fmt == "svg" else 0.1,
            useFillThreshold=fmt == "svg",
            fillThreshold=0.05,
        )
    else:
        Draw.rdDepictor.Compute2DCoords(mol)
        drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


__all__ = [
    "ATOM_COLUMNS",
    "DEFAULT_STEPS",
    "EXPLAIN_LAYERS",
    "MAX_STEPS",
    "MOLECULE_COLUMNS",
    "AtomWeight",
    "ExplainLayer",
    "Explanation",
    "MemberAttribution",
    "atom_weights",
    "atoms_frame",
    "attribute_member",
    "explain",
    "explain_graph",
    "explainable_copy",
    "molecules_frame",
    "similarity_map",
    "token_endpoints",
]
