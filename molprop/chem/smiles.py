"""SMILES parsing and standardisation with RDKit.

``parse_smiles`` is the single entry point through which SMILES strings become RDKit
molecules; it raises :class:`InvalidInputError` with the reason RDKit gives.
"""

from __future__ import annotations

from rdkit import Chem, RDLogger
from rdkit.Chem.MolStandardize import rdMolStandardize

from molprop.errors import InvalidInputError

RDLogger.DisableLog("rdApp.*")

#: Longest SMILES string accepted (longer strings are rejected as invalid input).
MAX_SMILES_LENGTH = 1000


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


def parse_smiles(
    smiles: object,
    *,
    standardize: bool = False,
    max_length: int = MAX_SMILES_LENGTH,
) -> Chem.Mol:
    """Parse ``smiles`` into a sanitised RDKit molecule.

    Args:
        smiles: the SMILES string.
        standardize: if true, keep the largest fragment's parent after RDKit's cleanup,
            normalisation and reionisation (salts and solvents stripped).
        max_length: strings longer than this are rejected.

    Raises:
        InvalidInputError: empty, non-string, over-long or unparsable input; the message
            gives the reason.
    """
    if smiles is None or (isinstance(smiles, float) and smiles != smiles):
        raise InvalidInputError("empty SMILES (missing value)")
    if not isinstance(smiles, str):
        raise InvalidInputError(f"SMILES must be a string, got {type(smiles).__name__}")
    text = smiles.strip()
    if not text:
        raise InvalidInputError("empty SMILES")
    if len(text) > max_length:
        raise InvalidInputError(f"SMILES too long ({len(text)} > {max_length} characters)")
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
