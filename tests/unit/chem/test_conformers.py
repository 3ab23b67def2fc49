"""3D embedding limits: a heavy-atom cap and a time limit, each reported per row naming it.

Each case runs in a subprocess with a hard wall-clock limit, so a missing limit shows up as a
test failure (ETKDG on a 300-atom macrocycle does not finish) rather than a hung suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from molprop.chem.conformers import conformer_limits, embed_molecule
from molprop.errors import ConfigError

RING_300 = "C1" + "C" * 298 + "C1"  # cyclotriacontahectane: 300 heavy atoms, 900 with H
RING_150 = "C1" + "C" * 148 + "C1"

_CODE = """
import json, sys
from molprop.io.table import featurize_rows
from molprop.featurize.graph3d import Graph3DFeaturizer
items = featurize_rows(sys.argv[1:], Graph3DFeaturizer().from_smiles)
print(json.dumps([[type(i).__name__, str(i) if isinstance(i, Exception) else i.n_nodes]
                  for i in items]))
"""


def _featurize_3d(smiles: list[str], env: dict[str, str], limit_s: float = 90.0) -> list:
    """3D-featurise ``smiles`` in a fresh process -> [[type name, error or node count], ...]."""
    run_env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    try:
        res = subprocess.run(
            [sys.executable, "-c", _CODE, *smiles],
            env=run_env,
            capture_output=True,
            text=True,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"3D embedding did not return within {limit_s:.0f} s")
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_large_macrocycle_is_rejected_by_the_atom_cap_per_row():
    out = _featurize_3d(["CCO", RING_300, "c1ccccc1O"], {"MOLPROP_CONFORMER_MAX_ATOMS": ""})
    assert out[0] == ["MolGraph", 3] and out[2] == ["MolGraph", 7]  # heavy-atom graphs (default)
    kind, message = out[1]
    assert kind == "InvalidInputError"
    assert "300 heavy atoms" in message and "MOLPROP_CONFORMER_MAX_ATOMS" in message
    assert "200" in message  # the default cap


def test_embedding_time_limit_names_the_limit():
    """A 150-atom ring is under the default cap; with a 1 s limit ETKDG gives up (RDKit's own
    timeout) and the row is invalid_input naming MOLPROP_CONFORMER_TIMEOUT."""
    out = _featurize_3d(["CCO", RING_150], {"MOLPROP_CONFORMER_TIMEOUT": "1"})
    assert out[0] == ["MolGraph", 3]
    kind, message = out[1]
    assert kind == "InvalidInputError"
    assert "MOLPROP_CONFORMER_TIMEOUT" in message and "1 s" in message


def test_cap_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("MOLPROP_CONFORMER_MAX_ATOMS", "5")
    with pytest.raises(Exception, match="6 heavy atoms.*5 allowed"):
        embed_molecule("c1ccccc1")
    monkeypatch.setenv("MOLPROP_CONFORMER_MAX_ATOMS", "6")
    assert embed_molecule("c1ccccc1").numbers.tolist().count(6) == 6


@pytest.mark.parametrize(
    "name, value",
    [
        ("MOLPROP_CONFORMER_TIMEOUT", "ten"),
        ("MOLPROP_CONFORMER_TIMEOUT", "-1"),
        ("MOLPROP_CONFORMER_MAX_ATOMS", "0"),
    ],
)
def test_bad_limit_settings_are_config_errors(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        conformer_limits()


def test_defaults(monkeypatch):
    monkeypatch.delenv("MOLPROP_CONFORMER_MAX_ATOMS", raising=False)
    monkeypatch.delenv("MOLPROP_CONFORMER_TIMEOUT", raising=False)
    assert conformer_limits() == (200, 10)
