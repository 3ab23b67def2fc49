"""Stage 1 of the prediction pipeline (:mod:`molprop.inference.pipeline`): the checks every
predicted SMILES passes before featurisation, and the one wording of their refusals.

Work limits (:class:`WorkLimits`): a SMILES longer than the length limit, one that is not valid
Unicode, or a molecule with more heavy atoms than the size limit is refused before it is parsed
for the model (the row's ``invalid_input``). The Python keywords (``Predictor.predict(...,
max_heavy_atoms=..., max_smiles_length=...)``) and the service (``MOLPROP_MAX_SMILES_LENGTH``,
``MOLPROP_MAX_HEAVY_ATOMS``, checked before a request is queued) use the same checks; a refusal
names the limit as its caller knows it (:attr:`WorkLimits.names`). Without limits the parse
itself refuses what it cannot read (:func:`molprop.chem.smiles.parse_smiles`, with the
library's ``MAX_SMILES_LENGTH``).

Chemistry checks (:class:`ScreenedFeaturizer`): it wraps a model's featuriser; it parses the
SMILES, standardises the molecule (:func:`molprop.chem.standardize.standardize`: largest organic
fragment, neutralised; inorganic input, metals and elements the model never saw are
:class:`~molprop.errors.UnsupportedMoleculeError`, the row status ``unsupported``) and
featurises the result. The graph carries the SMILES the model read (``MolGraph.smiles``, the
output's ``standardized_smiles``): the input's own text when standardisation changed nothing,
else the RDKit canonical SMILES of the standardised molecule. Predicting that SMILES gives the
same prediction.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from rdkit import Chem

from molprop.chem.smiles import MAX_SMILES_LENGTH, parse_smiles, smiles_length_limit
from molprop.chem.standardize import standardize
from molprop.errors import InvalidInputError, PredictionCancelled
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.graph import MolGraph

#: how the Python keywords name the limits in a refusal
KEYWORD_NAMES: tuple[str, str] = ("max_smiles_length", "max_heavy_atoms")
#: how the service names them (its settings)
SERVICE_NAMES: tuple[str, str] = ("MOLPROP_MAX_SMILES_LENGTH", "MOLPROP_MAX_HEAVY_ATOMS")


def heavy_atom_count(smiles: str) -> int:
    """Heavy atoms of ``smiles`` from a cheap parse without sanitisation (0 when RDKit cannot
    read it: the featuriser then says why)."""
    mol = Chem.MolFromSmiles(smiles.strip(), sanitize=False)
    return 0 if mol is None else mol.GetNumHeavyAtoms()


def encodable(text: str) -> bool:
    """False for a string with lone surrogates (not valid Unicode: it cannot be UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def length_refusal(smiles: str, limit: int, name: str) -> str | None:
    """The reason ``smiles`` is over the length limit ``limit`` (named ``name``), or None."""
    if len(smiles) <= limit:
        return None
    return f"SMILES too long ({len(smiles)} > {limit} characters, {name})"


def size_refusal(heavy_atoms: int, limit: int | None, name: str) -> str | None:
    """The reason a molecule of ``heavy_atoms`` heavy atoms is over ``limit``, or None."""
    if limit is None or heavy_atoms <= limit:
        return None
    return f"molecule has {heavy_atoms} heavy atoms; the limit is {limit} per molecule ({name})"


@dataclass(frozen=True)
class WorkLimits:
    """The work limits of one call. ``max_smiles_length`` None: the parse's own limit
    (``MAX_SMILES_LENGTH``, or an enclosing :func:`~molprop.chem.smiles.smiles_length_limit`);
    ``max_heavy_atoms`` None: no size limit; ``names``: how refusals name the two limits."""

    max_smiles_length: int | None = None
    max_heavy_atoms: int | None = None
    names: tuple[str, str] = KEYWORD_NAMES

    @property
    def active(self) -> bool:
        """True when a limit is set (otherwise no row is refused here)."""
        return self.max_smiles_length is not None or self.max_heavy_atoms is not None

    def text_refusal(self, smiles: str) -> str | None:
        """Why the text ``smiles`` is refused (over the length limit, not valid Unicode), or
        None."""
        if self.max_smiles_length is not None:
            reason = length_refusal(smiles, self.max_smiles_length, self.names[0])
            if reason is not None:
                return reason
        if not encodable(smiles):
            return "SMILES contains characters that are not valid Unicode"
        return None

    def size_refusal(self, heavy_atoms: int) -> str | None:
        """Why a molecule of ``heavy_atoms`` heavy atoms is refused, or None."""
        return size_refusal(heavy_atoms, self.max_heavy_atoms, self.names[1])

    def refusal(self, smiles: object, heavy_atoms: int | None = None) -> str | None:
        """Why ``smiles`` is refused (:meth:`text_refusal`, then :meth:`size_refusal`), or
        None. ``heavy_atoms``: its count where the caller has it, else counted here (a cheap
        parse) when there is a size limit. A non-string passes (the parse reports it), and a
        SMILES over the parse's own length limit is not counted (the parse refuses it)."""
        if not isinstance(smiles, str):
            return None
        reason = self.text_refusal(smiles)
        if reason is not None or self.max_heavy_atoms is None:
            return reason
        if heavy_atoms is None:
            limit = MAX_SMILES_LENGTH if self.max_smiles_length is None else self.max_smiles_length
            if len(smiles) > limit:
                return None
            heavy_atoms = heavy_atom_count(smiles)
        return self.size_refusal(heavy_atoms)

    def check(self, smiles: object) -> None:
        """Raise :class:`~molprop.errors.InvalidInputError` with :meth:`refusal`'s reason."""
        reason = self.refusal(smiles)
        if reason is not None:
            raise InvalidInputError(reason)

    def length_limit(self) -> AbstractContextManager[None]:
        """The parse's length limit for this call (a context; nothing when none is set)."""
        if self.max_smiles_length is None:
            return nullcontext()
        return smiles_length_limit(self.max_smiles_length)


#: no limits: the parse alone refuses what it cannot read
NO_LIMITS = WorkLimits()


@dataclass(frozen=True)
class ScreenedFeaturizer:
    """``featurizer`` behind the chemistry checks. ``elements``: the elements the model was
    trained on (its applicability domain's record); None: the organic subset
    (:data:`~molprop.chem.standardize.ORGANIC_ELEMENTS`)."""

    featurizer: Any
    elements: frozenset[str] | None = None

    def from_smiles(self, smiles: object) -> MolGraph:
        """SMILES -> graph of the standardised molecule (raises ``InvalidInputError``, or its
        subclass ``UnsupportedMoleculeError``, with the reason; a table cell that is not a
        string is refused the same way)."""
        mol = parse_smiles(smiles)
        assert isinstance(smiles, str)  # parse_smiles refuses anything else
        result = standardize(mol, self.elements)
        if result.changed:
            text = result.smiles
            graph = self.featurizer.from_smiles(text)
        else:
            text = smiles.strip()
            # the 2D featuriser reads the parsed molecule itself (from_smiles would parse again)
            two_d = isinstance(self.featurizer, Graph2DFeaturizer)
            graph = self.featurizer(mol) if two_d else self.featurizer.from_smiles(text)
        return replace(graph, smiles=text)


def screened_row(
    screened: ScreenedFeaturizer,
    limits: WorkLimits = NO_LIMITS,
    should_stop: Callable[[], bool] | None = None,
) -> Callable[[object], MolGraph]:
    """Stages 1-2 for one SMILES row (a table cell): ``should_stop`` (asked first; true:
    :class:`~molprop.errors.PredictionCancelled`), the work limits, then ``screened`` (parse,
    chemistry checks, featurise). Call inside ``limits.length_limit()``."""

    def featurize_one(smiles: object) -> MolGraph:
        if should_stop is not None and should_stop():
            raise PredictionCancelled("prediction stopped while featurising")
        if limits.active:
            limits.check(smiles)
        return screened.from_smiles(smiles)

    return featurize_one


__all__ = [
    "KEYWORD_NAMES",
    "NO_LIMITS",
    "SERVICE_NAMES",
    "ScreenedFeaturizer",
    "WorkLimits",
    "encodable",
    "heavy_atom_count",
    "length_refusal",
    "screened_row",
    "size_refusal",
]
