"""SDF records are cut at their ``$$$$`` lines before RDKit reads them: a broken record is one
row of its own and never swallows the record after it (RDKit's supplier on the whole stream
read a three-line garbage record's missing counts line from the next record and lost it)."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from rdkit import Chem

from molprop.chem.conformers import embed_molecule
from molprop.chem.structures import iter_sdf_records, read_structures, sdf_record_texts
from molprop.io.readers import count_records, iter_chunks

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC"]
GARBAGE = "this is not\na molecule\nat all\n$$$$\n"


def _block(smiles: str, name: str, logp: str) -> str:
    """A 3D record (RDKit conformer, hydrogens kept) named ``name`` with a ``logp`` field."""
    mol = embed_molecule(smiles).mol
    mol.SetProp("_Name", name)
    return Chem.MolToMolBlock(mol) + f"> <logp>\n{logp}\n\n$$$$\n"


@pytest.fixture
def five_records(tmp_path: Path) -> Path:
    """Records 0, 2, 3, 4 are real molecules (with a ``logp`` property); record 1 is three
    lines of garbage."""
    blocks = [_block(s, f"m{i}", f"-{i}.5") for i, s in enumerate(SMILES)]
    path = tmp_path / "five.sdf"
    path.write_text(blocks[0] + GARBAGE + "".join(blocks[1:]))
    return path


def test_a_garbage_record_is_its_own_row_and_the_next_record_is_intact(five_records):
    records = list(iter_sdf_records(five_records, remove_hs=True))
    assert [r.index for r in records] == [0, 1, 2, 3, 4]
    assert records[1].mol is None
    assert str(records[1].error).startswith(f"SDF record 1 of {five_records}:")
    assert "'this is not'" in str(records[1].error)  # the record's first line, to find it
    good = [r for r in records if r.mol is not None]
    assert [r.name for r in good] == ["m0", "m1", "m2", "m3"]
    assert [Chem.MolToSmiles(r.mol) for r in good] == [Chem.CanonSmiles(s) for s in SMILES]
    assert [r.properties()["logp"] for r in good] == ["-0.5", "-1.5", "-2.5", "-3.5"]


def test_the_smiles_view_has_one_row_per_record(five_records):
    chunks = list(iter_chunks(five_records, "smiles", chunk_size=2))
    frame = pd.concat([c.frame for c in chunks], ignore_index=True)
    assert len(frame) == 5 == count_records(five_records)
    assert frame["name"].tolist() == ["m0", "", "m1", "m2", "m3"]
    assert frame["logp"].tolist() == ["-0.5", "", "-1.5", "-2.5", "-3.5"]
    failures = {c.start + i: str(e) for c in chunks for i, e in c.failures.items()}
    assert list(failures) == [1] and "SDF record 1" in failures[1]


def test_the_3d_view_has_one_row_per_record(five_records):
    records = read_structures(five_records)
    assert len(records) == 5
    assert isinstance(records[1], Exception) and "SDF record 1" in str(records[1])
    assert [r.info["logp"] for i, r in enumerate(records) if i != 1] == [-0.5, -1.5, -2.5, -3.5]


def test_record_texts_cut_at_dollar_lines_only():
    text = b"a\n$$$$\r\nb\nc\n$$$$  \n\n  \n"
    assert list(sdf_record_texts(io.BytesIO(text))) == [b"a\n$$$$\r\n", b"b\nc\n$$$$  \n"]
    # a MOL file (no $$$$) is one record
    assert list(sdf_record_texts(io.BytesIO(b"x\ny\nM  END\n"))) == [b"x\ny\nM  END\n"]


def test_a_mol_file_without_terminator_is_read(tmp_path):
    path = tmp_path / "one.mol"
    path.write_text(Chem.MolToMolBlock(Chem.MolFromSmiles("CCO")))
    records = list(iter_sdf_records(path))
    assert len(records) == 1 and Chem.MolToSmiles(records[0].mol) == "CCO"
