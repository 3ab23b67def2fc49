"""Service work budget: worst-case valid requests, latency under heavy load, abandoned requests.

Starts one ``uvicorn api.main:app`` on a free 127.0.0.1 port with the default service settings
(``api.settings.Settings``; ``--set name=value`` overrides one as ``MOLPROP_<NAME>``) serving
``solubility`` from ``--model-dir`` (default ``pretrained/``). If that model cannot be loaded
(e.g. artifacts older than the featuriser), a stand-in with the shipped architecture
(``molprop.pretrained_recipes.MODEL``, 3 members, 1 epoch on ESOL) is trained and served: the
cost of a request depends on the architecture, not on the weights. Then, bounded and
self-stopping:

A. each worst-case *valid* request shape alone (at ``MOLPROP_MAX_BATCH``,
   ``MOLPROP_MAX_REQUEST_TOKENS``, ``MOLPROP_MAX_HEAVY_ATOMS``, ``MOLPROP_MAX_SMILES_LENGTH``),
   plus an abusive request (1,000 x 1,000-carbon chains) and one over the token
   budget: status, client latency, and the worker time from the ``Server-Timing`` header;
B. 4 clients each sending ``--heavy-requests`` copies of the slowest shape of A back to back,
   while a probe client sends 1-SMILES requests (drug-like, Lipophilicity) every 0.1 s: probe
   p50/p95/max latency, heavy statuses and worker times;
C. 2 heavy requests abandoned 1 s after sending (socket closed), then a 2-SMILES request and a
   100-molecule request: their latency against the same requests on the idle service;
D. two heavy clients of one kind beside the 1-SMILES probe, for each kind: the largest valid
   request of 200 unbonded carbons (``C.C.C…``, 1 self-loop token each) and the largest valid
   request of drug-like molecules to the 3D model (``homo_lumo_gap_3d``, conformers embedded),
   each preceded by its abusive form (1,000 of them), which must be refused (413).

Writes ``benchmarks/results/service_budget.json`` (``--result-name``).

Usage: ``python -m benchmarks.service_budget [--omp-threads 1] [--set max_request_tokens=60000]``
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.common import REPO, WORK, save_result
from benchmarks.service_load import free_port, wait_ready

log = logging.getLogger(__name__)
LIPO = REPO / "data" / "moleculenet" / "lipo_chemprop.csv.gz"


# ----------------------------------------------------------------------- model and server
def standin_model_dir() -> Path:
    """A model directory with a 1-epoch, 3-member model of the shipped architecture."""
    from molprop.models.config import TrainConfig
    from molprop.pretrained_recipes import MODEL
    from molprop.training.train import TrainRequest, run_train

    root = WORK / "service_budget_models"
    out = root / "solubility"
    if not (out / "config.json").exists():
        log.info("training the stand-in model (shipped architecture, 1 epoch) in %s", out)
        frame = pd.read_csv(
            REPO / "data" / "moleculenet" / "delaney_chemprop.csv.gz",
            dtype=str,
            keep_default_na=False,
        )
        run_train(
            TrainRequest(
                data=frame,
                smiles_column="smiles",
                target_columns=["logp"],
                out=out,
                task_type="regression",
                model=dict(MODEL),
                train=TrainConfig(epochs=1, batch_size=64, ensemble_size=3),
                units=["log10(mol/L)"],
                name="solubility",
                progress=False,
            )
        )
    return root


def choose_model_dir(model_dir: Path) -> tuple[Path, str]:
    from molprop.inference import Predictor

    try:
        Predictor.from_pretrained(model_dir / "solubility")
        return model_dir, f"{model_dir / 'solubility'}"
    except Exception as exc:  # any load failure: fall back to the stand-in
        log.warning("cannot load %s (%s): serving a stand-in", model_dir / "solubility", exc)
        root = standin_model_dir()
        return root, f"stand-in: shipped architecture, 3 members, 1 epoch ({root / 'solubility'})"


def start_server(
    port: int, model_dir: Path, omp: int, overrides: dict[str, str]
) -> subprocess.Popen:
    env = {
        **os.environ,
        "MOLPROP_MODEL_DIR": str(model_dir),
        "OMP_NUM_THREADS": str(omp),
        "MKL_NUM_THREADS": str(omp),
        **{f"MOLPROP_{k.upper()}": v for k, v in overrides.items()},
    }
    env.pop("MOLPROP_API_KEY", None)
    WORK.mkdir(parents=True, exist_ok=True)
    log_file = open(WORK / "service_budget_uvicorn.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "api.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


# ----------------------------------------------------------------------- requests
def server_timing(header: str | None) -> dict[str, float]:
    """``queue;dur=1.0, inference;dur=2.0`` -> {"queue_s": 0.001, "inference_s": 0.002}."""
    out: dict[str, float] = {}
    for part in (header or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[f"{name}_s"] = float(dur) / 1000
    return out


def post(http, smiles: list[str], model: str = "solubility") -> dict[str, Any]:
    t0 = time.perf_counter()
    r = http.post("/v1/predict", json={"model": model, "smiles": smiles})
    out: dict[str, Any] = {
        "status": r.status_code,
        "latency_s": time.perf_counter() - t0,
        **server_timing(r.headers.get("server-timing")),
    }
    if r.status_code == 200:
        statuses = [x["status"] for x in r.json()["results"]]
        out.update(ok=statuses.count("ok"), invalid=statuses.count("invalid_input"))
    else:
        out["detail"] = str(r.json().get("detail", ""))[:200]
    return out


def post_and_hang_up(url: str, smiles: list[str], after_s: float) -> None:
    """Send a request on a raw socket and close it unanswered after ``after_s`` seconds."""
    body = json.dumps({"model": "solubility", "smiles": smiles}).encode()
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST /v1/predict HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(after_s)


def rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in d.items()}


def summary(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"n": 0}
    return {
        "n": int(a.size),
        "p50_s": round(float(np.percentile(a, 50)), 3),
        "p95_s": round(float(np.percentile(a, 95)), 3),
        "max_s": round(float(a.max()), 3),
    }


# ----------------------------------------------------------------------- request shapes
def cylinder_smiles(rows: int, cols: int) -> str:
    """A rows x cols grid of sp3 carbons, wrapped along ``rows``: 3-4 bonds per atom, the
    densest carbon graph whose SMILES fits 1,000 characters at 200 atoms (4 x 50)."""
    from rdkit import Chem

    mol = Chem.RWMol()
    for _ in range(rows * cols):
        mol.AddAtom(Chem.Atom(6))
    for i in range(rows):
        for j in range(cols):
            u = i * cols + j
            for v in (((i + 1) % rows) * cols + j, i * cols + j + 1 if j + 1 < cols else u):
                if v != u and mol.GetBondBetweenAtoms(u, v) is None:
                    mol.AddBond(u, v, Chem.BondType.SINGLE)
    out = mol.GetMol()
    Chem.SanitizeMol(out)
    return Chem.MolToSmiles(out)


def shapes(settings, lipo: list[str]) -> dict[str, list[str]]:
    """Worst-case valid requests at the settings' limits, the abusive one, one over budget."""
    from api.budget import molecule_costs

    budget, cap, batch = settings.max_request_tokens, settings.max_heavy_atoms, settings.max_batch
    costs = molecule_costs(lipo)  # the served models: ESA on 2D graphs
    order = np.argsort([-c.tokens for c in costs])
    drug, total = [], 0
    for i in order:  # the largest drug-like molecules that fit: most tokens in <= max_batch
        if len(drug) == batch:
            break
        if costs[i].heavy_atoms <= cap and total + costs[i].tokens <= budget:
            drug.append(lipo[i])
            total += costs[i].tokens
    chain = "C" * cap
    dense = cylinder_smiles(4, cap // 4)
    assert len(dense) <= settings.max_smiles_length, len(dense)
    dense_tokens = molecule_costs([dense])[0].tokens
    n_chain = min(batch, budget // (2 * (cap - 1)))
    return {
        "drug_like_largest": drug,
        "chains_at_heavy_atom_cap": [chain] * n_chain,
        "dense_at_heavy_atom_cap": [dense] * min(batch, budget // dense_tokens),
        "abusive_1000x_C1000": ["C" * 1000] * 1000,
        "over_token_budget": [chain] * (n_chain + 1),
    }


# ----------------------------------------------------------------------- phases
def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of the server process so far (all its threads)."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def phase_alone(url: str, requests: dict[str, list[str]], repeats: int, pid: int) -> dict[str, Any]:
    """Each request alone; ``server_cpu_s`` is the server's CPU time during it: with one OMP
    thread, the time the request needs on an idle core (robust to other load on the machine)."""
    import httpx

    def one(http, smiles: list[str]) -> dict[str, Any]:
        cpu = server_cpu_s(pid)
        out = post(http, smiles)
        return rounded({**out, "server_cpu_s": server_cpu_s(pid) - cpu})

    out = {}
    with httpx.Client(base_url=url, timeout=300) as http:
        for name, smiles in requests.items():
            runs = [one(http, smiles) for _ in range(repeats)]
            out[name] = {"n_smiles": len(smiles), "runs": runs}
            log.info("A %s (%d SMILES): %s", name, len(smiles), runs)
    return out


def phase_concurrent(
    url: str,
    heavy: list[str],
    lipo: list[str],
    n_heavy: int,
    clients: int = 4,
    model: str = "solubility",
) -> dict[str, Any]:
    import httpx

    heavy_runs: list[dict[str, Any]] = []
    probe: list[dict[str, Any]] = []
    done = threading.Event()

    def heavy_client() -> None:
        with httpx.Client(base_url=url, timeout=300) as http:
            for _ in range(n_heavy):
                heavy_runs.append(rounded(post(http, heavy, model)))

    def probe_client() -> None:
        rng = np.random.default_rng(0)
        with httpx.Client(base_url=url, timeout=60) as http:
            while not done.is_set():
                probe.append(post(http, [lipo[int(rng.integers(len(lipo)))]]))
                time.sleep(0.1)

    start = time.monotonic()
    threads = [threading.Thread(target=heavy_client) for _ in range(clients)]
    prober = threading.Thread(target=probe_client)
    prober.start()
    time.sleep(0.5)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    prober.join()
    ok = [r for r in heavy_runs if r["status"] == 200]
    return {
        "seconds": round(time.monotonic() - start, 1),
        "heavy_requests": len(heavy_runs),
        "heavy_status_counts": {
            str(s): sum(r["status"] == s for r in heavy_runs)
            for s in sorted({r["status"] for r in heavy_runs})
        },
        "heavy_latency": summary([r["latency_s"] for r in heavy_runs]),
        "heavy_worker_time": summary([r["inference_s"] for r in ok if "inference_s" in r]),
        "heavy_runs": heavy_runs,
        "probe_1_smiles_latency": summary([p["latency_s"] for p in probe]),
        "probe_status_counts": {
            str(s): sum(p["status"] == s for p in probe)
            for s in sorted({p["status"] for p in probe})
        },
    }


def phase_abandoned(url: str, heavy: list[str], lipo: list[str]) -> dict[str, Any]:
    import httpx

    two, hundred = lipo[:2], lipo[:100]
    with httpx.Client(base_url=url, timeout=300) as http:
        idle = {"2_smiles": rounded(post(http, two)), "100_smiles": rounded(post(http, hundred))}
        hangers = [
            threading.Thread(target=post_and_hang_up, args=(url, heavy, 1.0)) for _ in range(2)
        ]
        for t in hangers:
            t.start()
        for t in hangers:
            t.join()
        after = {"2_smiles": rounded(post(http, two)), "100_smiles": rounded(post(http, hundred))}
    return {"abandoned_heavy_requests": 2, "idle": idle, "right_after_abandoning": after}


#: the 3D model phase D sends its heavy requests to (shipped in ``pretrained/``)
MODEL_3D = "homo_lumo_gap_3d"


def largest_valid(costs: list, budget: int, batch: int) -> int:
    """How many molecules of ``costs`` (in order) fit ``budget`` work and ``batch`` rows."""
    total = 0
    for n, cost in enumerate(costs[:batch]):
        total += cost.work
        if total > budget:
            return n
    return min(batch, len(costs))


def heavy_kinds(settings, lipo: list[str], model_dir: Path) -> dict[str, dict[str, Any]]:
    """Phase D's heavy requests: model, the largest valid request, the abusive one."""
    from api.budget import predictor_costs
    from molprop.inference import Predictor

    budget, batch = settings.max_request_tokens, settings.max_batch
    dots = ".".join(["C"] * min(200, settings.max_heavy_atoms))
    n_dots = (
        budget
        // predictor_costs([dots], Predictor.from_pretrained(model_dir / "solubility"))[0].work
    )
    kinds = {
        "disconnected_200_atoms": {
            "model": "solubility",
            "valid": [dots] * min(batch, n_dots),
            "abusive": [dots] * batch,
        }
    }
    if (model_dir / MODEL_3D).is_dir():
        drug = lipo[:batch]
        costs = predictor_costs(drug, Predictor.from_pretrained(model_dir / MODEL_3D))
        kinds["drug_like_3d"] = {
            "model": MODEL_3D,
            "valid": drug[: largest_valid(costs, budget, batch)],
            "abusive": drug,
        }
    return kinds


def phase_two_heavy(
    url: str, kinds: dict[str, dict[str, Any]], lipo: list[str], n_heavy: int
) -> dict[str, Any]:
    """For each kind: its abusive request alone (must be 413), then 2 clients sending its largest
    valid request ``n_heavy`` times each beside the 1-SMILES probe."""
    import httpx

    out: dict[str, Any] = {}
    for name, kind in kinds.items():
        with httpx.Client(base_url=url, timeout=300) as http:
            abusive = rounded(post(http, kind["abusive"], kind["model"]))
        log.info("D %s abusive (%d SMILES): %s", name, len(kind["abusive"]), abusive)
        result = phase_concurrent(url, kind["valid"], lipo, n_heavy, 2, kind["model"])
        log.info("D %s: %s", name, {k: v for k, v in result.items() if k != "heavy_runs"})
        out[name] = {
            "model": kind["model"],
            "abusive": {"n_smiles": len(kind["abusive"]), **abusive},
            "valid_n_smiles": len(kind["valid"]),
            **result,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", type=Path, default=REPO / "pretrained")
    p.add_argument("--omp-threads", type=int, default=1, help="OMP/MKL threads of the server")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a service setting for this run, e.g. max_request_tokens=60000",
    )
    p.add_argument("--repeats", type=int, default=1, help="runs of each shape in phase A")
    p.add_argument("--heavy-requests", type=int, default=2, help="per heavy client in phase B")
    p.add_argument("--phases", default="ABCD", help="which phases to run (A, B, C, D)")
    p.add_argument("--result-name", default="service_budget")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    overrides = dict(item.split("=", 1) for item in args.set)
    from api.settings import Settings

    model_dir, model_note = choose_model_dir(args.model_dir)
    settings = Settings(model_dir=model_dir, **overrides)
    lipo = pd.read_csv(LIPO)["smiles"].tolist()
    requests = shapes(settings, lipo)
    load_before = os.getloadavg()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port, model_dir, args.omp_threads, overrides)
    try:
        wait_ready(url)
        phase_alone(url, {"warm_up": lipo[:50]}, 1, server.pid)
        alone = phase_alone(url, requests, args.repeats, server.pid)
        valid = [n for n in alone if n not in ("abusive_1000x_C1000", "over_token_budget")]
        slowest = max(valid, key=lambda n: max(r.get("inference_s", 0) for r in alone[n]["runs"]))
        concurrent: dict[str, Any] = {"status": "not run"}
        abandoned: dict[str, Any] = {"status": "not run"}
        two_heavy: dict[str, Any] = {"status": "not run"}
        if "B" in args.phases:
            log.info("B: 4 clients x %d of %s + 1-SMILES probe", args.heavy_requests, slowest)
            concurrent = phase_concurrent(url, requests[slowest], lipo, args.heavy_requests)
            log.info("B: %s", {k: v for k, v in concurrent.items() if k != "heavy_runs"})
        if "C" in args.phases:
            abandoned = phase_abandoned(url, requests[slowest], lipo)
            log.info("C: %s", abandoned)
        if "D" in args.phases:
            kinds = heavy_kinds(settings, lipo, model_dir)
            two_heavy = phase_two_heavy(url, kinds, lipo, args.heavy_requests)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    worst = max(r.get("inference_s", 0) for n in valid for r in alone[n]["runs"])
    worst_cpu = max(r["server_cpu_s"] for n in valid for r in alone[n]["runs"])
    path = save_result(
        args.result_name,
        {
            "status": "ok",
            "server": "uvicorn api.main:app, 1 process, 127.0.0.1",
            "model": model_note,
            "omp_threads": args.omp_threads,
            "settings": {
                k: v
                for k, v in settings.model_dump(mode="json").items()
                if k not in ("api_key", "model_dir")
            },
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "worst_valid_request_worker_s": round(worst, 3),
            "worst_valid_request_server_cpu_s": round(worst_cpu, 3),
            "slowest_valid_shape": slowest,
            "alone": alone,
            "concurrent_4_heavy": concurrent,
            "abandoned": abandoned,
            "two_heavy_clients": two_heavy,
        },
    )
    probe = concurrent.get("probe_1_smiles_latency", {}).get("p95_s")
    log.info(
        "worst valid request: worker %.2f s, server CPU %.2f s; 1-SMILES p95 under load %s s"
        "; -> %s",
        worst,
        worst_cpu,
        probe,
        path,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
