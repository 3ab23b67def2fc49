"""The chemistry checks every predicted SMILES passes before featurisation.

:class:`ScreenedFeaturizer` wraps a model's featuriser: it parses the SMILES, standardises the
molecule (:func:`molprop.chem.standardize.standardize`: largest organic fragment, neutralised;
inorganic input, metals and elements the model never saw are
:class:`~molprop.errors.UnsupportedMoleculeError`, the row status ``unsupported``) and
featurises the result. The graph carries the SMILES the model read (``MolGraph.smiles``, the
output's ``standardized_smiles``): the input's own text when standardisation changed nothing,
else the RDKit canonical SMILES of the standardised molecule. Predicting that SMILES gives the
same prediction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from molprop.chem.smiles import parse_smiles
from molprop.chem.standardize import standardize
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.graph import MolGraph


@dataclass(frozen=True)
class ScreenedFeaturizer:
    """``featurizer`` behind the chemistry checks. ``elements``: the elements the model was
    trained on (its applicability domain's record); None: the organic subset
    (:data:`~molprop.chem.standardize.ORGANIC_ELEMENTS`)."""

    featurizer: Any
    elements: frozenset[str] | None = None

    def from_smiles(self, smiles: str) -> MolGraph:
        """SMILES -> graph of the standardised molecule (raises ``InvalidInputError``, or its
        subclass ``UnsupportedMoleculeError``, with the reason)."""
        mol = parse_smiles(smiles)
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


__all__ = ["ScreenedFeaturizer"]
