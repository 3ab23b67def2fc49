"""Structure files as tables (one row per record, per-record issues) and the one SDF parser
shared by the SMILES view (``molprop predict``) and the 3D view (training, 3D prediction)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rdkit import Chem

from molprop.chem.conformers import embed_molecule
from molprop.chem.structures import iter_sdf_records, read_structures
from molprop.errors import InvalidInputError
from molprop.featurize.graph3d import Graph3DFeaturizer
from molprop.io.readers import iter_chunks
from molprop.io.structures import load_structure_table


@pytest.fixture
def sdf_with_a_broken_record(tmp_path: Path) -> Path:
    """CCO, a record with an unknown element (RDKit rejects it), benzene; 3D, with ``homo``."""
    blocks = []
    for smi, value in (("CCO", "1.5"), ("c1ccccc1", "-0.25")):
        mol = embed_molecule(smi).mol
        mol.SetProp("homo", value)
        blocks.append(Chem.MolToMolBlock(mol) + "> <homo>\n" + value + "\n\n$$$$\n")
    broken = blocks[0].replace(" O ", " Xz ")
    path = tmp_path / "mols.sdf"
    path.write_text(blocks[0] + broken + blocks[1])
    return path


def test_sdf_records_become_table_rows_with_per_record_issues(sdf_with_a_broken_record):
    table = load_structure_table(
        sdf_with_a_broken_record, "smiles", ["homo"], Graph3DFeaturizer(), progress=False
    )
    assert table.rows.tolist() == [0, 2]
    np.testing.assert_allclose(table.targets[:, 0], [1.5, -0.25])
    assert table.smiles == ["CCO", "c1ccccc1"]
    assert [i.row for i in table.invalid] == [1]
    assert table.graphs[1].n_nodes == 6  # benzene's heavy atoms (the default 3D graph)
    assert table.frame["record"].tolist() == [0, 1, 2]


def test_one_sdf_parser_reports_a_bad_record_alike_in_both_views(sdf_with_a_broken_record):
    """The SMILES view (hydrogens removed, for ``molprop predict`` with a 2D model) and the 3D
    view (hydrogens kept) read the same records through ``iter_sdf_records`` and report the
    broken record with the same reason (they had two readers with two messages)."""
    path = sdf_with_a_broken_record
    records = list(iter_sdf_records(path))
    assert [r.index for r in records] == [0, 1, 2]
    assert records[1].mol is None and isinstance(records[1].error, InvalidInputError)
    reason = str(records[1].error)
    assert reason.startswith(f"SDF record 1 of {path}:")
    assert records[2].properties() == {"homo": "-0.25"}

    chunks = list(iter_chunks(path, "smiles", chunk_size=2))
    smiles_view = pd.concat([c.frame for c in chunks], ignore_index=True)
    assert smiles_view["smiles"].tolist() == ["CCO", "", "c1ccccc1"]
    assert smiles_view["homo"].tolist() == ["1.5", "", "-0.25"]
    assert [str(e) for c in chunks for e in c.failures.values()] == [reason]

    structures = read_structures(path)
    assert str(structures[1]) == reason
    assert [s.n_atoms for i, s in enumerate(structures) if i != 1] == [9, 12]


def test_2d_drawing_in_sdf_is_a_per_record_error_not_a_flat_structure(tmp_path):
    """RDKit gives every molblock a conformer, 2D drawings included; their distances are not
    molecular geometry, so the 3D reader must refuse them per record."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    from molprop.chem.structures import read_structures
    from molprop.errors import InvalidInputError

    flat = Chem.MolFromSmiles("CCO")
    AllChem.Compute2DCoords(flat)
    real = Chem.AddHs(Chem.MolFromSmiles("CCN"))
    AllChem.EmbedMolecule(real, randomSeed=0)
    path = tmp_path / "mixed.sdf"
    with Chem.SDWriter(str(path)) as writer:
        writer.write(flat)
        writer.write(real)
    records = read_structures(path)
    assert isinstance(records[0], InvalidInputError) and "2D" in str(records[0])
    assert not isinstance(records[1], Exception) and records[1].n_atoms == real.GetNumAtoms()
