"""Work estimate of a request before it is queued: heavy atoms and attention tokens per molecule.

Counted from a cheap RDKit parse (no sanitisation, about 1 µs per atom), the way the model makes
tokens: ESA one token per directed bond (2 per bond), NSA one per atom. A 3D model in mode
``bonds`` on heavy atoms without radius tokens has the 2D graph's tokens (its tokens are the
SMILES's bonds); otherwise a 3D model's radius graph is not known before embedding and its
tokens are bounded by atoms (hydrogens included if the featuriser keeps them) x
``max_neighbors``. An unparsable SMILES costs one token
(the featuriser rejects it before any model work).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rdkit import Chem, RDLogger

from molprop.inference import Predictor

RDLogger.DisableLog("rdApp.*")


@dataclass(frozen=True)
class MoleculeCost:
    """Heavy atoms and attention tokens of one molecule."""

    heavy_atoms: int
    tokens: int


def _heavy_graph(mol: Chem.Mol, text: str) -> tuple[int, int, int]:
    """(heavy atoms, graph atoms, graph bonds) of an unsanitised parse. The graph is the
    featuriser's: hydrogens removed the way RDKit's parser removes them (isotopes such as
    ``[2H]`` stay)."""
    if "H" not in text:  # no hydrogen atoms possible: every atom and bond is in the graph
        return mol.GetNumAtoms(), mol.GetNumAtoms(), mol.GetNumBonds()
    heavy = mol.GetNumHeavyAtoms()
    try:
        graph = Chem.RemoveHs(mol, sanitize=False)
    except Exception:  # RDKit refuses some inputs; the featuriser reports them
        graph = mol
    return heavy, graph.GetNumAtoms(), graph.GetNumBonds()


def _cost_2d(smiles: str, token_kind: str) -> MoleculeCost:
    text = smiles.strip()
    mol = Chem.MolFromSmiles(text, sanitize=False)
    if mol is None:
        return MoleculeCost(0, 1)
    heavy, atoms, bonds = _heavy_graph(mol, text)
    return MoleculeCost(heavy, max(1, 2 * bonds if token_kind == "esa" else atoms))


def _cost_3d(
    smiles: str, token_kind: str, include_h: bool, max_neighbors: int | None
) -> MoleculeCost:
    text = smiles.strip()
    mol = Chem.MolFromSmiles(text, sanitize=False)
    if mol is None:
        return MoleculeCost(0, 1)
    heavy, atoms, _ = _heavy_graph(mol, text)
    if include_h:
        try:
            full = Chem.MolFromSmiles(text)
        except Exception:  # RDKit raises for some inputs; the featuriser reports them
            full = None
        if full is None:
            return MoleculeCost(heavy, 1)
        atoms = full.GetNumAtoms() + sum(a.GetTotalNumHs() for a in full.GetAtoms())
    neighbours = atoms - 1 if max_neighbors is None else min(max_neighbors, atoms - 1)
    return MoleculeCost(heavy, max(1, atoms * neighbours if token_kind == "esa" else atoms))


def molecule_costs(
    smiles: Sequence[str], token_kind: str = "esa", featurizer: object | None = None
) -> list[MoleculeCost]:
    """One :class:`MoleculeCost` per SMILES for a model with ``token_kind`` tokens (``esa`` /
    ``nsa``) and ``featurizer`` (the model's; None or a 2D one: bonds of the molecular graph)."""
    if getattr(featurizer, "kind", "2d") == "3d":
        include_h = bool(getattr(featurizer, "include_h", True))
        bonds_only = getattr(featurizer, "radius_tokens", None) is None
        if getattr(featurizer, "mode", "radius") == "bonds" and not include_h and bonds_only:
            return [_cost_2d(s, token_kind) for s in smiles]  # the SMILES's heavy-atom bonds
        k = getattr(featurizer, "max_neighbors", None)
        return [_cost_3d(s, token_kind, include_h, k) for s in smiles]
    return [_cost_2d(s, token_kind) for s in smiles]


def predictor_costs(smiles: Sequence[str], predictor: Predictor) -> list[MoleculeCost]:
    """:func:`molecule_costs` for the model ``predictor`` serves."""
    return molecule_costs(smiles, predictor.config.model.token_kind, predictor.featurizer)
