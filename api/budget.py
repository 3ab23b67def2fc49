"""Work estimate of a request before it is queued: heavy atoms, attention tokens and conformer
atoms per molecule.

Counted from a cheap RDKit parse (no sanitisation, about 1 µs per atom), the way the model makes
tokens: ESA one token per directed bond (2 per bond) plus one self-loop token per atom without a
bond (each atom of ``C.C.C``, each ion of ``[Na+].[Cl-]``), NSA one per atom. A 3D model in mode
``bonds`` on heavy atoms without radius tokens has the 2D graph's tokens (its tokens are the
SMILES's bonds); otherwise a 3D model's radius graph is not known before embedding and its
tokens are bounded by atoms (hydrogens included if the featuriser keeps them) x
``max_neighbors``. An unparsable SMILES costs one token
(the featuriser rejects it before any model work).

A 3D model embeds a conformer per SMILES (ETKDG + MMFF, hydrogens included) before any model
work; that costs far more than its tokens, so each atom to embed counts
:data:`CONFORMER_TOKENS_PER_ATOM` tokens of work (:attr:`MoleculeCost.work`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rdkit import Chem, RDLogger

from molprop.inference import Predictor

RDLogger.DisableLog("rdApp.*")


#: work of embedding one atom's conformer (3D models), in attention tokens: measured on 40
#: Lipophilicity molecules, 1 thread: ETKDG + MMFF 3.7 ms per atom (hydrogens included), the
#: 2D model (``solubility``, 3 members) 0.19 ms per token (``benchmarks/service_budget.py``)
CONFORMER_TOKENS_PER_ATOM = 20


@dataclass(frozen=True)
class MoleculeCost:
    """Heavy atoms, attention tokens and atoms whose conformer is embedded (3D) of one
    molecule; ``work``: its tokens plus the conformer counted in tokens."""

    heavy_atoms: int
    tokens: int
    conformer_atoms: int = 0

    @property
    def work(self) -> int:
        return self.tokens + CONFORMER_TOKENS_PER_ATOM * self.conformer_atoms


@dataclass(frozen=True)
class RequestCost:
    """A request's molecules summed (the rows refused before the model left out)."""

    tokens: int = 0
    conformer_atoms: int = 0

    @property
    def work(self) -> int:
        return self.tokens + CONFORMER_TOKENS_PER_ATOM * self.conformer_atoms

    def add(self, cost: MoleculeCost) -> RequestCost:
        return RequestCost(self.tokens + cost.tokens, self.conformer_atoms + cost.conformer_atoms)


def _heavy_graph(mol: Chem.Mol, text: str) -> tuple[int, int, int, int]:
    """(heavy atoms, graph atoms, graph bonds, graph atoms without a bond) of an unsanitised
    parse. The graph is the featuriser's: hydrogens removed the way RDKit's parser removes them
    (isotopes such as ``[2H]`` stay)."""
    graph = mol
    if "H" in text:  # hydrogen atoms possible: the graph is the parse without them
        try:
            graph = Chem.RemoveHs(mol, sanitize=False)
        except Exception:  # RDKit refuses some inputs; the featuriser reports them
            graph = mol
    lonely = sum(1 for atom in graph.GetAtoms() if atom.GetDegree() == 0)
    heavy = mol.GetNumHeavyAtoms() if "H" in text else mol.GetNumAtoms()
    return heavy, graph.GetNumAtoms(), graph.GetNumBonds(), lonely


def _cost_2d(smiles: str, token_kind: str) -> MoleculeCost:
    text = smiles.strip()
    mol = Chem.MolFromSmiles(text, sanitize=False)
    if mol is None:
        return MoleculeCost(0, 1)
    heavy, atoms, bonds, lonely = _heavy_graph(mol, text)
    return MoleculeCost(heavy, max(1, 2 * bonds + lonely if token_kind == "esa" else atoms))


def _embedded_atoms(text: str) -> int:
    """Atoms of the conformer a 3D featuriser embeds for ``text`` (hydrogens included; 0 when
    RDKit cannot sanitise it: the featuriser refuses it before embedding)."""
    try:
        mol = Chem.MolFromSmiles(text)
    except Exception:  # RDKit raises for some inputs; the featuriser reports them
        return 0
    if mol is None:
        return 0
    return mol.GetNumAtoms() + sum(a.GetTotalNumHs() for a in mol.GetAtoms())


def _cost_3d(
    smiles: str, token_kind: str, include_h: bool, max_neighbors: int | None
) -> MoleculeCost:
    text = smiles.strip()
    mol = Chem.MolFromSmiles(text, sanitize=False)
    if mol is None:
        return MoleculeCost(0, 1)
    heavy, atoms, _, _ = _heavy_graph(mol, text)
    embedded = _embedded_atoms(text)
    if include_h:
        if embedded == 0:
            return MoleculeCost(heavy, 1)
        atoms = embedded
    neighbours = atoms - 1 if max_neighbors is None else min(max_neighbors, atoms - 1)
    tokens = max(1, atoms * neighbours if token_kind == "esa" else atoms)
    return MoleculeCost(heavy, tokens, embedded)


def molecule_costs(
    smiles: Sequence[str], token_kind: str = "esa", featurizer: object | None = None
) -> list[MoleculeCost]:
    """One :class:`MoleculeCost` per SMILES for a model with ``token_kind`` tokens (``esa`` /
    ``nsa``) and ``featurizer`` (the model's; None or a 2D one: bonds of the molecular graph)."""
    if getattr(featurizer, "kind", "2d") == "3d":
        include_h = bool(getattr(featurizer, "include_h", True))
        bonds_only = getattr(featurizer, "radius_tokens", None) is None
        if getattr(featurizer, "mode", "radius") == "bonds" and not include_h and bonds_only:
            return [  # the SMILES's heavy-atom bonds, and the conformer embedded with hydrogens
                replace(_cost_2d(s, token_kind), conformer_atoms=_embedded_atoms(s.strip()))
                for s in smiles
            ]
        k = getattr(featurizer, "max_neighbors", None)
        return [_cost_3d(s, token_kind, include_h, k) for s in smiles]
    return [_cost_2d(s, token_kind) for s in smiles]


def predictor_costs(smiles: Sequence[str], predictor: Predictor) -> list[MoleculeCost]:
    """:func:`molecule_costs` for the model ``predictor`` serves."""
    return molecule_costs(smiles, predictor.config.model.token_kind, predictor.featurizer)
