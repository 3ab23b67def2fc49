"""The chemists' notebooks run top to bottom (``MOLPROP_NOTEBOOK_FAST=1``: small data, few
epochs). A cell error, or a cell running past ``CELL_TIMEOUT`` seconds, fails the test.

The kernel is started from a kernel spec written to a temporary ``JUPYTER_PATH`` whose command is
*this* interpreter (``sys.executable -m ipykernel_launcher``), so the notebooks always run in the
environment under test, whatever other kernels the machine has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CELL_TIMEOUT = 300
KERNEL = "molprop-test"
MAX_BYTES = 300_000

#: notebook -> modules it needs that another issue delivers (skip only if one is missing)
NEEDS = {
    "01_predict_quickstart.ipynb": ["api.main", "molprop.artifact.domain", "httpx", "uvicorn"],
    "02_finetune_inhouse_assay.ipynb": ["molprop.transfer.finetune"],
    "03_dft_to_gw_transfer.ipynb": [
        "molprop.transfer.fidelity_split",
        "molprop.transfer.pretrain",
    ],
    "04_3d_and_crystals.ipynb": ["molprop.featurize.graph3d", "molprop.chem.structures"],
    "05_trust_your_predictions.ipynb": [
        "molprop.artifact.calibration",
        "molprop.inference.explain",
        "captum",
        "crepes",
    ],
    "06_embeddings_similarity.ipynb": ["molprop.cli.embed", "sklearn"],
}


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory) -> Path:
    """A JUPYTER_PATH holding a kernel spec that runs this interpreter."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "molprop (test)",
                "language": "python",
            }
        )
    )
    return root


def test_every_notebook_is_tested() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_notebook_is_small_and_committed_without_errors(name: str) -> None:
    path = NOTEBOOKS / name
    assert path.stat().st_size < MAX_BYTES, f"{name} is {path.stat().st_size} bytes"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any("MOLPROP_NOTEBOOK_FAST" in c.source for c in code), "no fast-mode parameter cell"
    assert not any("../shared" in c.source for c in nb.cells)
    for cell in code:
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", []))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_notebook_runs(name: str, kernel_path: Path, monkeypatch, tmp_path) -> None:
    for module in NEEDS[name]:
        pytest.importorskip(module, reason=f"{name} needs {module}, not in this checkout yet")
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_path))
    monkeypatch.setenv("MOLPROP_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("MOLPROP_NO_PROGRESS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' scratch folders go here
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for o in outputs)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"
    size = len(nbformat.writes(nb).encode())
    assert size < 2_000_000, f"{name} executed is {size} bytes: figures too large"
