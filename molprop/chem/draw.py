"""2D depictions of molecules (RDKit ``MolDraw2DSVG``), for pages and reports."""

from __future__ import annotations

from rdkit.Chem import rdDepictor
from rdkit.Chem.Draw import rdMolDraw2D

from molprop.chem.smiles import parse_smiles

#: default picture size in pixels (width, height)
DRAWING_SIZE = (220, 160)


def molecule_svg(
    smiles: str, size: tuple[int, int] = DRAWING_SIZE, max_length: int | None = None
) -> str:
    """The molecule of ``smiles`` drawn in 2D as SVG text (RDKit coordinates, white background,
    no legend: the picture carries no text of the caller's besides atom symbols).

    Raises:
        InvalidInputError: ``smiles`` does not parse (see :func:`molprop.chem.parse_smiles`;
            ``max_length`` as there).
    """
    mol = parse_smiles(smiles, max_length=max_length)
    rdDepictor.Compute2DCoords(mol)
    width, height = size
    drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
    drawer.drawOptions().clearBackground = True
    rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


__all__ = ["DRAWING_SIZE", "molecule_svg"]
