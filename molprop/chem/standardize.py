"""Chemistry checks before the model: standardise a parsed molecule, or say why it is unsupported.

Every SMILES predicted (CLI, Python, service, jobs) goes through :func:`standardize` after
parsing and before featurisation:

1. **Metals disconnected** (RDKit ``MetalDisconnector``): a salt written with a covalent
   bond to the metal (``O=C(O[Na])c1ccccc1``) becomes ions.
2. **Inorganic input refused**: a molecule with no carbon-containing fragment (``[Na+].[Cl-]``,
   ``O``, ``N.N.Cl[Pt]Cl``) is :class:`~molprop.errors.UnsupportedMoleculeError`. "Organic"
   means "contains carbon", the rule RDKit's ``LargestFragmentChooser(preferOrganic=True)``
   uses.
3. **Metals refused**: any metal other than the alkali and alkaline-earth counter-ions
   (:data:`COUNTER_ION_METALS`) anywhere in the input (a palladium porphyrin, ferrocene,
   cisplatin, a copper salt) is unsupported: the models are not trained on metal complexes.
4. **Largest organic fragment kept** (most atoms, then mass; RDKit's chooser): counter-ions,
   salts and solvents are dropped (sodium benzoate -> benzoate).
5. **Neutralised** (RDKit ``Uncharger``): charges that a proton can remove or add are removed
   (benzoate -> benzoic acid, a zwitterionic amino acid -> its neutral form); charges that
   cannot be neutralised stay (quaternary ammonium, N-oxides, nitro groups).
6. **Elements checked**: an element of the kept molecule that the model never saw in training
   is unsupported. The model's elements are those of its training set, stored in its
   applicability domain (:mod:`molprop.artifact.domain`); a model without that record uses
   :data:`ORGANIC_ELEMENTS`.

The result says whether anything changed: an unchanged molecule is the input as parsed, and
the input's own text is the SMILES the model reads.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rdkit import Chem
from rdkit.Chem.MolStandardize import rdMolStandardize

from molprop.errors import UnsupportedMoleculeError

#: Elements a model accepts when its artifact does not record its training set's elements: the
#: SMILES organic subset (B, C, N, O, P, S, F, Cl, Br, I) plus H and Si.
ORGANIC_ELEMENTS: frozenset[str] = frozenset(
    ("H", "B", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Br", "I")
)
#: Metals removed as counter-ions (in a fragment that is not kept); any other metal makes a
#: molecule unsupported.
COUNTER_ION_METALS: frozenset[str] = frozenset(
    ("Li", "Na", "K", "Rb", "Cs", "Mg", "Ca", "Sr", "Ba")
)
_PT = Chem.GetPeriodicTable()
#: Atomic numbers of the metals: alkali, alkaline-earth, transition, lanthanide, actinide and
#: post-transition metals (the metalloids B, Si, Ge, As, Sb, Te are not metals here).
METALS: frozenset[int] = frozenset(
    (3, 4, 11, 12, 13, 19, 20, 31, 37, 38, 49, 50, 55, 56, 81, 82, 83, 84, 87, 88)
    + tuple(range(21, 31))
    + tuple(range(39, 49))
    + tuple(range(57, 81))
    + tuple(range(89, 113))
)
_COUNTER_ION_NUMBERS = frozenset(_PT.GetAtomicNumber(e) for e in COUNTER_ION_METALS)


@dataclass(frozen=True)
class Standardized:
    """A molecule after :func:`standardize`. ``changed``: False when ``mol`` is the input
    molecule as parsed (one fragment, nothing to neutralise)."""

    mol: Chem.Mol
    changed: bool

    @property
    def smiles(self) -> str:
        """RDKit canonical SMILES of the standardised molecule."""
        return Chem.MolToSmiles(self.mol)


def _element_list(symbols: Collection[str]) -> str:
    return ", ".join(sorted(symbols, key=_PT.GetAtomicNumber))


def standardize(mol: Chem.Mol, elements: Collection[str] | None = None) -> Standardized:
    """The largest organic fragment of ``mol``, neutralised (see the module docstring).

    Args:
        mol: a sanitised molecule (:func:`molprop.chem.smiles.parse_smiles`); not modified.
        elements: the elements of the model's training set (None: :data:`ORGANIC_ELEMENTS`).

    Raises:
        UnsupportedMoleculeError: no carbon-containing fragment, a metal other than an alkali
            or alkaline-earth counter-ion, or an element outside ``elements``; the message
            names the element or the reason.
    """
    known = ORGANIC_ELEMENTS if elements is None else frozenset(elements)
    numbers = {atom.GetAtomicNum() for atom in mol.GetAtoms()}
    if 6 not in numbers:
        raise UnsupportedMoleculeError(
            "inorganic: no carbon-containing fragment (salts, water, metal compounds and other "
            "inorganic inputs are not predicted)"
        )
    metals = {n for n in numbers if n in METALS and n not in _COUNTER_ION_NUMBERS}
    if metals:
        names = _element_list({_PT.GetElementSymbol(n) for n in metals})
        raise UnsupportedMoleculeError(
            f"contains the metal {names}: metal complexes and organometallics are not "
            f"predicted (only {_element_list(COUNTER_ION_METALS)} counter-ions are removed)"
        )
    out, changed = mol, False
    if numbers & _COUNTER_ION_NUMBERS:
        out = rdMolStandardize.MetalDisconnector().Disconnect(out)
        changed = True
    if len(Chem.GetMolFrags(out)) > 1:
        out = rdMolStandardize.LargestFragmentChooser(preferOrganic=True).choose(out)
        changed = True
    if any(atom.GetFormalCharge() for atom in out.GetAtoms()):
        neutral = rdMolStandardize.Uncharger().uncharge(out)
        if changed or Chem.MolToSmiles(neutral) != Chem.MolToSmiles(out):
            out, changed = neutral, True
    result = Standardized(out, changed)
    unknown = {atom.GetSymbol() for atom in out.GetAtoms()} - known
    if unknown:
        where = (
            "the model's training set"
            if elements is not None
            else "the organic subset this model accepts (its training elements are not recorded)"
        )
        raise UnsupportedMoleculeError(
            f"contains {_element_list(unknown)}: not among the elements of {where}: "
            f"{_element_list(known)}",
            smiles=result.smiles,
        )
    return result


__all__ = [
    "COUNTER_ION_METALS",
    "METALS",
    "ORGANIC_ELEMENTS",
    "Standardized",
    "standardize",
]
