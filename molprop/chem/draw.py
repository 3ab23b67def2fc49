"""2D depictions of molecules (RDKit ``MolDraw2DSVG``), for pages and reports."""

from __future__ import annotations

from rdkit.Chem import rdDepictor
from rdkit.Chem.Draw import rdMolDraw2D

from molprop.chem.smiles import parse_smiles
from molprop.errors import InvalidInputError

#: default picture size in pixels (width, height)
DRAWING_SIZE = (220, 160)


def molecule_svg(
    smiles: str,
    size: tuple[int, int] = DRAWING_SIZE,
    max_length: int | None = None,
    max_heavy_atoms: int | None = None,
) -> str:
    """The molecule of ``smiles`` drawn in 2D as SVG text (RDKit coordinates, white background,
    no legend: the picture carries no text of the caller's besides atom symbols). The SVG grows
    with the molecule (~0.5 kB per heavy atom): ``max_heavy_atoms`` bounds it.

    Raises:
        InvalidInputError: ``smiles`` does not parse (see :func:`molprop.chem.parse_smiles`;
            ``max_length`` as there), has more than ``max_heavy_atoms`` heavy atoms, or RDKit
            cannot lay it out.
    """
    mol = parse_smiles(smiles, max_length=max_length)
    heavy = mol.GetNumHeavyAtoms()
    if max_heavy_atoms is not None and heavy > max_heavy_atoms:
        raise InvalidInputError(
            f"molecule has {heavy} heavy atoms; drawings are limited to {max_heavy_atoms}"
        )
    width, height = size
    drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
    drawer.drawOptions().clearBackground = True
    try:
        rdDepictor.Compute2DCoords(mol)
        rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
    except (RuntimeError, ValueError) as exc:  # RDKit's layout / drawing errors
        raise InvalidInputError(f"RDKit could not draw the molecule: {exc}") from exc
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


__all__ = ["DRAWING_SIZE", "molecule_svg"]
