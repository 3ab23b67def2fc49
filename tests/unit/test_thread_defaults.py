"""``import molprop`` makes idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE) unless the user
chose a policy. Checked on libgomp itself: with ``OMP_DISPLAY_ENV=VERBOSE`` it prints the spin
count it started with (300000 by default, 0 for PASSIVE, 3e10 for ACTIVE)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _libgomp_spincount(code: str, **env: str) -> str:
    run_env = {
        k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    }
    run_env.update(OMP_DISPLAY_ENV="VERBOSE", **env)
    res = subprocess.run(
        [sys.executable, "-c", code],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [x for x in res.stderr.splitlines() if "GOMP_SPINCOUNT" in x]
    if not lines:
        pytest.skip("torch does not use libgomp here")
    return lines[0].split("=", 1)[1].strip().strip("'")


@pytest.mark.parametrize(
    "code",
    [
        "import molprop, torch",
        "from molprop.inference import Predictor",
        "from molprop.cli.main import main; import torch",
    ],
)
def test_molprop_first_means_passive_openmp_threads(code: str) -> None:
    assert _libgomp_spincount(code) == "0"


def test_user_policy_is_kept_and_torch_first_is_unchanged() -> None:
    assert _libgomp_spincount("import molprop, torch", OMP_WAIT_POLICY="ACTIVE") == "30000000000"
    assert _libgomp_spincount("import torch, molprop") == "300000"  # too late: documented
