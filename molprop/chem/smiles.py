"""SMILES parsing and standardisation with RDKit.

``parse_smiles`` is the single entry point through which SMILES strings become RDKit
molecules; it raises :class:`InvalidInputError` with the reason RDKit gives.

Whitespace: leading and trailing whitespace is stripped (CSV cells, pasted text); whitespace
*inside* a SMILES is invalid input. RDKit stops reading at the first space, tab or newline and
takes the rest as the molecule's name, so ``"c1ccccc1 O"`` would silently become benzene.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from rdkit import Chem, RDLogger
from rdkit.Chem.MolStandardize import rdMolStandardize

from molprop.errors import InvalidInputError

RDLogger.DisableLog("rdApp.*")

#: Longest SMILES string accepted (longer strings are rejected as invalid input).
MAX_SMILES_LENGTH = 1000
_LENGTH_LIMIT: ContextVar[int] = ContextVar("molprop_max_smiles_length", default=MAX_SMILES_LENGTH)
_INNER_SPACE = re.compile(r"\s")


def _sanitize_reason(smiles: str) -> str:
    """Ask RDKit why a SMILES fails, without sanitisation first."""
    mol = Chem.MolFromSmiles(smiles, sanitize=False)
    if mol is None:
        return "RDKit could not parse the SMILES (syntax error)"
    try:
        Chem.SanitizeMol(mol)
    except Exception as exc:  # RDKit raises several exception types
        return f"RDKit sanitisation failed: {exc}"
    return "RDKit could not parse the SMILES"


@contextmanager
def smiles_length_limit(max_length: int) -> Iterator[None]:
    """Inside the block (this thread or task only), ``parse_smiles`` rejects SMILES longer than
    ``max_length`` instead of ``MAX_SMILES_LENGTH`` (the service's ``MOLPROP_MAX_SMILES_LENGTH``
    goes through the featurisers this way)."""
    token = _LENGTH_LIMIT.set(int(max_length))
    try:
        yield
    finally:
        _LENGTH_LIMIT.reset(token)


def parse_smiles(
    smiles: object,
    *,
    standardize: bool = False,
    max_length: int | None = None,
) -> Chem.Mol:
    """Parse ``smiles`` into a sanitised RDKit molecule.

    Args:
        smiles: the SMILES string.
        standardize: if true, keep the largest fragment's parent after RDKit's cleanup,
            normalisation and reionisation (salts and solvents stripped).
        max_length: strings longer than this are rejected (default ``MAX_SMILES_LENGTH``, or
            the limit of an enclosing :func:`smiles_length_limit`).

    Leading/trailing whitespace is ignored; whitespace inside the string is rejected.

    Raises:
        InvalidInputError: empty, non-string, over-long, whitespace-containing or unparsable
            input; the message gives the reason.
    """
    if smiles is None or (isinstance(smiles, float) and smiles != smiles):
        raise InvalidInputError("empty SMILES (missing value)")
    if not isinstance(smiles, str):
        raise InvalidInputError(f"SMILES must be a string, got {type(smiles).__name__}")
    text = smiles.strip()
    if not text:
        raise InvalidInputError("empty SMILES")
    max_length = _LENGTH_LIMIT.get() if max_length is None else max_length
    if len(text) > max_length:
        raise InvalidInputError(f"SMILES too long ({len(text)} > {max_length} characters)")
    space = _INNER_SPACE.search(text)
    if space is not None:
        raise InvalidInputError(
            f"SMILES contains whitespace ({space.group()!r} at character "
            f"{space.start() + 1}); a SMILES has no spaces, tabs or line "
            "breaks (RDKit would read only the part before it)"
        )
    mol = Chem.MolFromSmiles(text)
    if mol is None:
        raise InvalidInputError(_sanitize_reason(text))
    if mol.GetNumAtoms() == 0:
        raise InvalidInputError("SMILES contains no atoms")
    if standardize:
        try:
            mol = rdMolStandardize.Cleanup(mol)
            mol = rdMolStandardize.FragmentParent(mol)
        except Exception as exc:
            raise InvalidInputError(f"standardisation failed: {exc}") from exc
    return mol


def canonical_smiles(smiles: str) -> str:
    """RDKit canonical SMILES of ``smiles`` (raises :class:`InvalidInputError`)."""
    return Chem.MolToSmiles(parse_smiles(smiles))


def inchikey(smiles_or_mol: str | Chem.Mol) -> str:
    """Standard InChIKey: the identity used to compare molecules across files."""
    mol = parse_smiles(smiles_or_mol) if isinstance(smiles_or_mol, str) else smiles_or_mol
    key = Chem.MolToInchiKey(mol)
    if not key:
        raise InvalidInputError("InChIKey could not be computed")
    return key
