"""One prediction pipeline (molprop.inference.pipeline): every Predictor entry point, the
streaming loop, the CLI's file driver and the panel give the same values, spreads, percentiles,
domain and intervals for the same molecules; a structure gets the domain of the molecule
perceived from its coordinates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rdkit import Chem
from rdkit.Chem import AllChem

from molprop.inference import Panel, Predictor
from molprop.inference.files import FileOptions, predict_file
from molprop.inference.screen import SERVICE_NAMES, WorkLimits

#: ok rows (one standardised: a salt), a bad SMILES, an inorganic one, a far-away molecule
SMILES = [
    "CCO",
    "c1ccccc1O",
    "CC(=O)Oc1ccccc1C(=O)O",
    "[Na+].[O-]C(=O)c1ccccc1",
    "not a smiles",
    "[Na+].[Cl-]",
    "B1OC(C)(C)C(C)(C)O1",  # pinacolborane: far from the training set
    "CCN(CC)CC",
]
COLUMNS = [
    "standardized_smiles",
    "logS",
    "logS_unit",
    "logS_percentile",
    "logS_std",
    "status",
    "error",
    "in_domain",
    "similarity",
    "logS_low",
    "logS_high",
]


@pytest.fixture(scope="module")
def solubility() -> Predictor:
    return Predictor.from_pretrained("solubility")


@pytest.fixture(scope="module")
def reference(solubility: Predictor) -> pd.DataFrame:
    return solubility.predict(SMILES)


def _same(got: pd.DataFrame, want: pd.DataFrame, columns: list[str]) -> None:
    for column in columns:
        a, b = got[column].reset_index(drop=True), want[column].reset_index(drop=True)
        if column == "in_domain":
            a, b = a.astype("boolean"), b.astype("boolean")
        pd.testing.assert_series_equal(a, b, check_names=False, check_dtype=False, rtol=0, atol=0)


def test_predict_has_every_stage(reference: pd.DataFrame) -> None:
    assert reference.columns.tolist() == ["smiles", *COLUMNS]
    assert reference["status"].tolist() == ["ok"] * 4 + ["invalid_input", "unsupported", "ok", "ok"]
    assert reference["standardized_smiles"].iloc[3] == "O=C(O)c1ccccc1"
    assert not reference["in_domain"].iloc[6]  # pinacolborane is out of the domain
    assert reference["in_domain"].isna().tolist() == [False] * 4 + [True, True, False, False]


def test_every_entry_point_gives_the_same_rows(
    solubility: Predictor, reference: pd.DataFrame, tmp_path: Path
) -> None:
    frame = pd.DataFrame({"id": range(len(SMILES)), "smi": SMILES})
    _same(solubility.predict_frame(frame, "smi"), reference, COLUMNS)
    items = solubility.featurize_smiles(SMILES)  # featurised elsewhere (worker processes)
    _same(solubility.predict_frame(frame, "smi", items=items), reference, COLUMNS)
    # the work limits are stage 1 only: a call with them predicts the passing rows alike
    limited = solubility.predict(SMILES, max_heavy_atoms=12, max_smiles_length=100)
    assert limited["status"].iloc[2] == "invalid_input" and "13 heavy atoms" in limited["error"][2]
    keep = [i for i in range(len(SMILES)) if i != 2]  # the same batch as without the row
    _same(limited.iloc[keep], solubility.predict([SMILES[i] for i in keep]), COLUMNS)
    # without the rows' molecules there is no domain stage; the rest is the same
    graphs = solubility.predict_graphs(solubility.featurize(SMILES))
    assert "in_domain" not in graphs.columns
    _same(graphs, reference, ["logS", "logS_unit", "logS_percentile", "logS_std", "status"])

    # the CLI's driver (streaming, featurised here and then in a worker process; one chunk:
    # float32 values depend on the batch a molecule is in, in the 7th digit)
    table = tmp_path / "in.csv"
    frame.to_csv(table, index=False)
    for n, options in enumerate(
        [FileOptions("smi", progress=False), FileOptions("smi", num_workers=1, progress=False)]
    ):
        out = tmp_path / f"out{n}.csv"
        counts, rows = predict_file(solubility, table, out, options)
        assert rows == len(SMILES) and counts["ok"] == 6
        written = pd.read_csv(out, float_precision="round_trip")
        numbers = ["logS", "logS_percentile", "logS_std", "similarity", "logS_low", "logS_high"]
        _same(written, reference, numbers)
        for column in ("standardized_smiles", "logS_unit", "status", "error"):
            assert written[column].fillna("").tolist() == reference[column].fillna("").tolist()
        text = pd.read_csv(out, dtype=str, keep_default_na=False)["in_domain"].tolist()
        assert text == ["" if v is pd.NA else str(v) for v in reference["in_domain"]]


def test_a_panel_of_one_model_is_that_model(solubility: Predictor, reference: pd.DataFrame) -> None:
    wide = Panel("", (solubility,), physchem=False).predict(SMILES)
    renamed = wide.rename(columns={"logS_in_domain": "in_domain", "logS_similarity": "similarity"})
    _same(renamed, reference, ["standardized_smiles", *COLUMNS[1:5], "status", "error"])
    ok = (reference["status"] == "ok").to_numpy()
    _same(renamed[ok], reference[ok], ["in_domain", "similarity", "logS_low", "logS_high"])


def test_the_service_limits_are_the_same_checks_named_as_settings() -> None:
    keyword = WorkLimits(max_smiles_length=10, max_heavy_atoms=3)
    service = WorkLimits(10, 3, SERVICE_NAMES)
    assert keyword.refusal("C" * 11) == "SMILES too long (11 > 10 characters, max_smiles_length)"
    assert service.refusal("C" * 11).endswith("MOLPROP_MAX_SMILES_LENGTH)")
    assert service.refusal("CCCC") == (
        "molecule has 4 heavy atoms; the limit is 3 per molecule (MOLPROP_MAX_HEAVY_ATOMS)"
    )
    assert keyword.refusal("C\udcff") == "SMILES contains characters that are not valid Unicode"
    assert keyword.refusal("CCC") is None and WorkLimits().refusal("C" * 5000) is None


# ------------------------------------------------------------------ structures: same stages


MOLECULES = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "c1ccncc1"]


@pytest.fixture(scope="module")
def gap_3d() -> Predictor:
    return Predictor.from_pretrained("homo_lumo_gap_3d")


def _conformers() -> list[Chem.Mol]:
    mols = []
    for smi in MOLECULES:
        mol = Chem.AddHs(Chem.MolFromSmiles(smi))
        AllChem.EmbedMolecule(mol, randomSeed=7)
        AllChem.MMFFOptimizeMolecule(mol)
        mols.append(mol)
    return mols


def test_structures_get_the_domain_of_their_perceived_molecule(
    gap_3d: Predictor, tmp_path: Path
) -> None:
    assert gap_3d.domain is not None
    mols = _conformers()
    objects = gap_3d.predict_structures(mols)
    assert objects.columns.tolist() == [
        "label",
        "gap_ev",
        "gap_ev_unit",
        "gap_ev_percentile",
        "gap_ev_std",
        "status",
        "error",
        "in_domain",
        "similarity",
        "gap_ev_low",
        "gap_ev_high",
    ]
    assert (objects["status"] == "ok").all()
    # the domain of a structure is its molecule's: as a SMILES request of that molecule gets it
    from_smiles = gap_3d.predict(MOLECULES)
    _same(objects, from_smiles, ["in_domain", "similarity"])
    # a structure file of the same geometries: the same rows
    path = tmp_path / "mols.sdf"
    with Chem.SDWriter(str(path)) as writer:
        for mol in mols:
            writer.write(mol)
    from_file = gap_3d.predict_structure_file(path)
    read_back = [m for m in Chem.SDMolSupplier(str(path), removeHs=False)]  # 4 decimals
    _same(from_file, gap_3d.predict_structures(read_back), objects.columns[1:].tolist())
    _same(from_file, objects, ["in_domain", "similarity"])


def test_a_structure_without_a_perceived_molecule_is_out_of_the_domain(
    gap_3d: Predictor,
) -> None:
    from ase import Atoms

    cell = Atoms("CO", positions=[[0, 0, 0], [1.13, 0, 0]], cell=[4, 4, 4], pbc=True)
    out = gap_3d.predict_structures([cell])
    assert out["status"].tolist() == ["ok"]
    assert out["in_domain"].tolist() == [False] and out["similarity"].tolist() == [0.0]
