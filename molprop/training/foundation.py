"""Foundation pretraining: an ESA encoder regresses the scaled RDKit descriptors of the corpus.

The recipe (CheMeleon's, on molprop's backbone): every descriptor that ``molprop.corpus.labels``
keeps is a regression target, robust-scaled and clipped; NaN / inf values are masked out of the
squared error. The molecules come from ``molprop foundation data`` (DATA/corpus.csv, the
labels of its first N rows in DATA/labels/).

Steps of :func:`pretrain`:

1. **Featurise once** (:func:`featurize_shards`): the labelled molecules become packed graph
   shards DATA/graphs/graphs_<k>.npz (atom / bond feature rows stored once per shard as tables,
   each atom / edge an index into them: exact features, a few bytes per atom). A molecule that
   cannot be featurised is listed in DATA/graphs/failures.csv and left out.
2. **Train** with Lightning: rows ``[0, val)`` are the validation set, ``[val, molecules)`` the
   training set (the corpus order is already a seeded random order). AdamW, linear warm-up then
   cosine decay to 10 % of the lr over the run; validation every ``val_every`` batches and at the
   end of each epoch, one line per validation appended to RUN/metrics.csv.
3. **Checkpoint**: RUN/checkpoints/last.ckpt every ``checkpoint_minutes`` and at every epoch end
   (plus epoch_<e>.ckpt); calling :func:`pretrain` again with the same RUN resumes from last.ckpt
   (epoch counter, step, optimiser and scheduler state, the sampler's shuffle of the epoch).
   Resuming inside an epoch skips the batches of that epoch that were already trained.

Data parallel: ``devices`` / ``num_nodes`` / ``strategy`` go to the Lightning Trainer; every rank
takes its slice of each global batch (``SizeBucketBatchSampler``), so one process and N
processes make the same optimiser steps.

:func:`export_foundation` turns a checkpoint into a molprop artifact (config.json, safetensors,
card.md) whose encoder and readout ``molprop finetune`` / ``molprop train --init`` start from;
its head predicts the descriptors (in their own units).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import shutil
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from multiprocessing import get_context
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from molprop.artifact import Artifact
from molprop.artifact.config import ArtifactConfig, Provenance
from molprop.corpus.build import MANIFEST_NAME, read_corpus
from molprop.corpus.labels import LABELS_DIR, META_NAME, load_scaled_labels
from molprop.data.batch import GraphBatch, collate_graphs
from molprop.data.loader import SizeBucketBatchSampler
from molprop.errors import ConfigError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.graph import MolGraph
from molprop.models.config import ModelConfig, TaskConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.nn.heads import masked_loss
from molprop.training.lightning_module import optimizer_groups

log = logging.getLogger(__name__)

GRAPHS_DIR = "graphs"
CHECKPOINTS = "checkpoints"
LAST = "last.ckpt"
METRICS_CSV = "metrics.csv"
RUN_CONFIG = "pretrain.json"
METRICS_FIELDS = (
    "time",
    "epoch",
    "step",
    "molecules_seen",
    "train_loss",
    "val_loss",
    "val_mae",
    "lr",
    "wall_s",
    "cpu_s",
)


@dataclass(frozen=True)
class PretrainConfig:
    """Pretraining settings (RUN/pretrain.json). ``molecules``: labelled molecules used (None:
    all), the first ``val`` of them for validation. The architecture (``hidden``, ``heads``,
    ``layers``, ``num_seeds``) must stay the same when a run resumes; ``epochs`` may grow."""

    molecules: int | None = None
    val: int = 5000
    epochs: int = 10
    hidden: int = 64
    heads: int = 4
    layers: str = "MSMSP S"
    num_seeds: int = 8
    batch_size: int = 64
    lr: float = 5e-4
    weight_decay: float = 0.0
    warmup_steps: int = 500
    lr_floor: float = 0.1
    val_every: int = 1000
    checkpoint_minutes: float = 8.0
    seed: int = 0

    ARCHITECTURE = ("hidden", "heads", "layers", "num_seeds", "val", "molecules", "seed")

    def model_config(self, node_dim: int, edge_dim: int, n_tasks: int) -> ModelConfig:
        return ModelConfig(
            node_dim=node_dim,
            edge_dim=edge_dim,
            n_tasks=n_tasks,
            hidden_dim=self.hidden,
            heads=self.heads,
            layers=self.layers,
            num_seeds=self.num_seeds,
            dropout=0.0,
        )

    @classmethod
    def from_dict(cls, data: dict) -> PretrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --------------------------------------------------------------------------- featurised shards


def _shard_path(directory: Path, k: int) -> Path:
    return directory / f"graphs_{k:05d}.npz"


def _featurize_chunk(chunk: Sequence[str]) -> list[tuple[MolGraph | None, str]]:
    featurizer = build_featurizer(FeaturizerConfig())
    out: list[tuple[MolGraph | None, str]] = []
    for smiles in chunk:
        try:
            out.append((featurizer.from_smiles(smiles), ""))
        except Exception as exc:  # the molecule is listed and left out, never silently lost
            out.append((None, f"{type(exc).__name__}: {exc}"))
    return out


def _table(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a (n, d) float32 matrix and each row's index into them."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    if len(rows) == 0:
        return np.zeros((0, rows.shape[1]), np.float32), np.zeros(0, np.int32)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return rows[first], inverse.astype(np.int32).ravel()


def pack_graphs(graphs: Sequence[MolGraph | None]) -> dict[str, np.ndarray]:
    """Graphs (None: failed) -> the arrays of one shard (see the module docstring)."""
    ok = np.asarray([g is not None for g in graphs])
    real = [g for g in graphs if g is not None]
    n_nodes = np.asarray([g.n_nodes if g is not None else 0 for g in graphs], np.int32)
    n_edges = np.asarray([g.n_edges if g is not None else 0 for g in graphs], np.int32)
    node_dim = real[0].x.shape[1] if real else 0
    edge_dim = real[0].edge_attr.shape[1] if real else 0
    x = np.concatenate([g.x for g in real]) if real else np.zeros((0, node_dim), np.float32)
    e = np.concatenate([g.edge_attr for g in real]) if real else np.zeros((0, edge_dim), np.float32)
    ei = (
        np.concatenate([g.edge_index for g in real], axis=1) if real else np.zeros((2, 0), np.int64)
    )
    x_table, x_codes = _table(x)
    e_table, e_codes = _table(e)
    return {
        "ok": ok,
        "n_nodes": n_nodes,
        "n_edges": n_edges,
        "x_table": x_table,
        "x_codes": x_codes,
        "e_table": e_table,
        "e_codes": e_codes,
        "edge_index": ei.astype(np.int32),
    }


def featurize_shards(data_dir: str | Path, workers: int = 1, progress: bool = True) -> list[Path]:
    """Featurise the labelled molecules into DATA/graphs/ (one shard per label shard); shards
    already there for the same labels are kept. Returns the shard paths."""
    from tqdm.auto import tqdm

    data_dir = Path(data_dir)
    meta = _labels_meta(data_dir)
    out = data_dir / GRAPHS_DIR
    out.mkdir(parents=True, exist_ok=True)
    n, size = int(meta["n_molecules"]), int(meta["shard_size"])
    stamp = out / "labels_sha256.json"
    if stamp.exists() and json.loads(stamp.read_text()) != meta["sha256"]:
        for old in out.glob("graphs_*.npz"):
            old.unlink()
    smiles = read_corpus(data_dir, n)
    paths = []
    failures: list[tuple[int, str, str]] = []
    bar = tqdm(total=n, desc="featurise", unit="mol", disable=not progress)
    pool = get_context("fork").Pool(workers) if workers > 1 else None
    try:
        for k in range(len(meta["shards"])):
            lo, hi = k * size, min(n, (k + 1) * size)
            path = _shard_path(out, k)
            paths.append(path)
            if path.exists():
                with np.load(path) as z:
                    bad = np.flatnonzero(~z["ok"])
                failures += [(lo + int(i), smiles[lo + int(i)], "see earlier build") for i in bad]
                bar.update(hi - lo)
                continue
            part = smiles[lo:hi]
            chunks = [part[i : i + 1000] for i in range(0, len(part), 1000)]
            results = pool.imap(_featurize_chunk, chunks) if pool else map(_featurize_chunk, chunks)
            graphs: list[MolGraph | None] = []
            for rows in results:
                for graph, reason in rows:
                    if graph is None:
                        failures.append((lo + len(graphs), part[len(graphs)], reason))
                    graphs.append(graph)
                bar.update(len(rows))
            tmp = path.with_name(path.stem + ".tmp.npz")
            # allow_pickle named (numpy's default): else its stub reads **arrays as that flag
            np.savez(tmp, allow_pickle=True, **pack_graphs(graphs))
            os.replace(tmp, path)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        bar.close()
    with open(out / "failures.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["row", "smiles", "reason"])
        writer.writerows(failures)
    stamp.write_text(json.dumps(meta["sha256"]))
    return paths


def _labels_meta(data_dir: Path) -> dict:
    path = data_dir / LABELS_DIR / META_NAME
    if not path.exists():
        raise ConfigError(
            f"no labels in {data_dir} ({path} missing): run `molprop foundation data` first"
        )
    return json.loads(path.read_text())


class PackedGraphs(Dataset):
    """The featurised shards as one dataset of ``rows`` (corpus row numbers) with their (n, T)
    scaled targets; graphs are unpacked per batch (``collate``)."""

    def __init__(self, shards: Sequence[Path], targets: np.ndarray, rows: np.ndarray) -> None:
        parts = [dict(np.load(p)) for p in shards]
        x_tables, e_tables, x_codes, e_codes, eis = [], [], [], [], []
        n_nodes, n_edges, ok = [], [], []
        x_base = e_base = 0
        for part in parts:
            x_tables.append(part["x_table"])
            e_tables.append(part["e_table"])
            x_codes.append(part["x_codes"].astype(np.int64) + x_base)
            e_codes.append(part["e_codes"].astype(np.int64) + e_base)
            x_base += len(part["x_table"])
            e_base += len(part["e_table"])
            eis.append(part["edge_index"])
            n_nodes.append(part["n_nodes"])
            n_edges.append(part["n_edges"])
            ok.append(part["ok"])
        self.x_table = np.concatenate(x_tables)
        self.e_table = np.concatenate(e_tables)
        self.x_codes = np.concatenate(x_codes)
        self.e_codes = np.concatenate(e_codes)
        self.edge_index = np.concatenate(eis, axis=1)
        all_nodes = np.concatenate(n_nodes).astype(np.int64)
        all_edges = np.concatenate(n_edges).astype(np.int64)
        self.node_start = np.concatenate([[0], np.cumsum(all_nodes)])
        self.edge_start = np.concatenate([[0], np.cumsum(all_edges)])
        featurised = np.concatenate(ok)
        rows = np.asarray(rows, dtype=np.int64)
        labelled = np.isfinite(targets[rows]).any(axis=1)
        self.rows = rows[featurised[rows] & labelled]
        self.targets = targets
        self.n_nodes, self.n_edges = all_nodes, all_edges

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return i

    def sizes(self) -> np.ndarray:
        return (self.n_nodes + self.n_edges)[self.rows]

    def graph(self, row: int) -> MolGraph:
        a, b = self.node_start[row], self.node_start[row + 1]
        c, d = self.edge_start[row], self.edge_start[row + 1]
        return MolGraph(
            x=self.x_table[self.x_codes[a:b]],
            edge_index=self.edge_index[:, c:d].astype(np.int64),
            edge_attr=self.e_table[self.e_codes[c:d]],
        )

    def collate(self, indices: Sequence[int]) -> GraphBatch:
        rows = self.rows[np.asarray(indices, dtype=np.int64)]
        return collate_graphs([self.graph(int(r)) for r in rows], self.targets[rows])


# --------------------------------------------------------------------------- Lightning module


def lr_factor(step: int, warmup: int, total: int, floor: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``floor`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * t))


class FoundationModule(L.LightningModule):
    """Masked-descriptor regression of a :class:`MolPropModel` (squared error over the finite
    scaled descriptors). Keeps the run's compute (wall, CPU seconds, molecules seen) in its
    checkpoints."""

    def __init__(self, model_config: dict, train: dict, total_steps: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = MolPropModel.from_config(ModelConfig.from_dict(model_config))
        self.train_cfg = train
        self.total_steps = total_steps
        self.compute = {"wall_s": 0.0, "cpu_s": 0.0, "molecules_seen": 0}
        self._val_sum = self._val_abs = self._val_n = 0.0
        self._train_sum = self._train_n = 0.0
        self._tick: tuple[float, float] | None = None

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        return self.model(batch)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):  # noqa: D102
        return batch.to(device) if isinstance(batch, GraphBatch) else batch

    def training_step(self, batch: GraphBatch, batch_idx: int) -> torch.Tensor:
        y, y_mask = batch.labels()
        loss = masked_loss(self.model(batch).float(), y, y_mask, "regression", "mse")
        self._train_sum += float(loss.detach()) * batch.num_graphs
        self._train_n += batch.num_graphs
        self.compute["molecules_seen"] += batch.num_graphs * self.trainer.world_size
        self.log("train_loss", loss, on_step=True, on_epoch=False, batch_size=batch.num_graphs)
        return loss

    def on_train_batch_start(self, batch, batch_idx: int) -> None:  # noqa: D102
        if self._tick is None:
            self._tick = (time.perf_counter(), time.process_time())

    def on_train_batch_end(self, outputs, batch, batch_idx: int) -> None:  # noqa: D102
        wall, cpu = time.perf_counter(), time.process_time()
        if self._tick is not None:
            self.compute["wall_s"] += wall - self._tick[0]
            self.compute["cpu_s"] += cpu - self._tick[1]
        self._tick = (wall, cpu)

    def on_train_epoch_start(self) -> None:  # noqa: D102
        self._tick = None

    def validation_step(self, batch: GraphBatch, batch_idx: int) -> None:  # noqa: D102
        pred = self.model(batch).float()
        y, y_mask = batch.labels()
        mask = y_mask.to(pred.dtype)
        err = (pred - y) * mask
        self._val_sum += float((err**2).sum())
        self._val_abs += float(err.abs().sum())
        self._val_n += float(mask.sum())

    def on_validation_epoch_start(self) -> None:  # noqa: D102
        self._val_sum = self._val_abs = self._val_n = 0.0

    def on_validation_epoch_end(self) -> None:  # noqa: D102
        sums = torch.tensor(
            [self._val_sum, self._val_abs, self._val_n], dtype=torch.float64, device=self.device
        )
        sums = (
            self.trainer.strategy.reduce(sums, reduce_op="sum")
            if self.trainer.world_size > 1
            else sums
        )
        n = max(float(sums[2]), 1.0)
        self.last_val = (float(sums[0]) / n, float(sums[1]) / n)
        self.log("val_loss", self.last_val[0], sync_dist=True)  # equal on every rank
        self._tick = None  # validation time is not training time

    def take_train_loss(self) -> float:
        """Mean training loss since the last call (NaN if no batch)."""
        value = self._train_sum / self._train_n if self._train_n else float("nan")
        self._train_sum = self._train_n = 0.0
        return value

    def on_save_checkpoint(self, checkpoint: dict) -> None:  # noqa: D102
        checkpoint["foundation_compute"] = dict(self.compute)

    def on_load_checkpoint(self, checkpoint: dict) -> None:  # noqa: D102
        self.compute.update(checkpoint.get("foundation_compute", {}))

    def configure_optimizers(self):  # noqa: D102
        cfg = self.train_cfg
        opt = torch.optim.AdamW(optimizer_groups(self.model, cfg["weight_decay"]), lr=cfg["lr"])
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda step: lr_factor(step, cfg["warmup_steps"], self.total_steps, cfg["lr_floor"]),
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class ResumableBatchSampler(SizeBucketBatchSampler):
    """:class:`SizeBucketBatchSampler` that can skip the first ``skip`` batches of the next
    epoch (a run resumed inside an epoch continues where it stopped)."""

    skip = 0

    def __iter__(self):
        skip, self.skip = self.skip, 0
        for i, batch in enumerate(super().__iter__()):
            if i >= skip:
                yield batch


# --------------------------------------------------------------------------- callbacks


class RunLog(L.Callback):
    """Progress lines every ``every`` batches and one RUN/metrics.csv row per validation;
    last.ckpt every ``minutes`` and at each epoch end (written atomically)."""

    def __init__(self, run: Path, minutes: float, every: int = 100) -> None:
        self.run = run
        self.ckpt_dir = run / CHECKPOINTS
        self.seconds = minutes * 60.0
        self.every = every
        self._last_save = time.monotonic()
        self._t0 = time.perf_counter()
        self._seen0 = 0

    def save(self, trainer: L.Trainer, name: str = LAST) -> None:
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.ckpt_dir / f".{name}.tmp"
        trainer.save_checkpoint(tmp)
        trainer.strategy.barrier()
        if trainer.is_global_zero:
            os.replace(tmp, self.ckpt_dir / name)
        self._last_save = time.monotonic()

    def on_train_start(self, trainer, pl_module) -> None:  # noqa: D102
        self._t0 = time.perf_counter()
        self._seen0 = pl_module.compute["molecules_seen"]

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: D102
        if trainer.is_global_zero and (batch_idx + 1) % self.every == 0:
            rate = (pl_module.compute["molecules_seen"] - self._seen0) / max(
                time.perf_counter() - self._t0, 1e-9
            )
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            print(
                f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs} batch {batch_idx + 1}/"
                f"{trainer.num_training_batches} step {trainer.global_step} loss "
                f"{float(loss):.4f} lr {trainer.optimizers[0].param_groups[0]['lr']:.2e} "
                f"{rate:.0f} mol/s",
                flush=True,
            )
        # every rank decides alike: the time of rank 0 is broadcast
        due = torch.tensor(float(time.monotonic() - self._last_save >= self.seconds))
        if 0 < trainer.max_steps <= trainer.global_step:  # stopping here: keep the place
            due = torch.tensor(1.0)
        if trainer.world_size > 1:
            due = trainer.strategy.broadcast(due, src=0)
        if bool(due):
            self.save(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:  # noqa: D102
        done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
        if done < trainer.num_training_batches:  # stopped inside the epoch (max_steps)
            return
        self.save(trainer)
        if trainer.is_global_zero:
            shutil.copyfile(
                self.ckpt_dir / LAST, self.ckpt_dir / f"epoch_{trainer.current_epoch + 1:03d}.ckpt"
            )

    def on_validation_end(self, trainer, pl_module) -> None:  # noqa: D102
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        val_loss, val_mae = pl_module.last_val
        path = self.run / METRICS_CSV
        new = not path.exists()
        with open(path, "a", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            if new:
                writer.writerow(METRICS_FIELDS)
            writer.writerow(
                [
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    trainer.current_epoch + 1,
                    trainer.global_step,
                    pl_module.compute["molecules_seen"],
                    f"{pl_module.take_train_loss():.5f}",
                    f"{val_loss:.5f}",
                    f"{val_mae:.5f}",
                    f"{trainer.optimizers[0].param_groups[0]['lr']:.3e}",
                    f"{pl_module.compute['wall_s']:.1f}",
                    f"{pl_module.compute['cpu_s']:.1f}",
                ]
            )
        print(
            f"validation: epoch {trainer.current_epoch + 1} step {trainer.global_step} "
            f"val_loss {val_loss:.4f} val_mae {val_mae:.4f}",
            flush=True,
        )


# --------------------------------------------------------------------------- pretrain / export


def _check_resume(run: Path, config: PretrainConfig) -> PretrainConfig:
    path = run / RUN_CONFIG
    if not path.exists():
        return config
    saved = PretrainConfig.from_dict(json.loads(path.read_text()))
    bad = [k for k in PretrainConfig.ARCHITECTURE if getattr(saved, k) != getattr(config, k)]
    if bad and (run / CHECKPOINTS / LAST).exists():
        given = ", ".join(f"{k}={getattr(config, k)!r} (run: {getattr(saved, k)!r})" for k in bad)
        raise ConfigError(f"{run} was started with other settings: {given}; use a new --run")
    return config


def pretrain(
    data_dir: str | Path,
    run_dir: str | Path,
    config: PretrainConfig,
    *,
    workers: int = 1,
    accelerator: str = "auto",
    devices: int | str = 1,
    num_nodes: int = 1,
    strategy: str = "auto",
    threads: int | None = None,
    max_steps: int = -1,
    progress_every: int = 100,
) -> Path:
    """Pretrain (or resume) in ``run_dir`` on the labelled corpus in ``data_dir`` (see the
    module docstring); returns ``run_dir``."""
    if threads:
        torch.set_num_threads(threads)
    data_dir, run = Path(data_dir), Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    config = _check_resume(run, config)
    meta = _labels_meta(data_dir)
    n_labelled = int(meta["n_molecules"])
    n = n_labelled if config.molecules is None else config.molecules
    if not config.val < n <= n_labelled:
        raise ConfigError(
            f"--molecules {n} must be more than --val {config.val} and at most the "
            f"{n_labelled} labelled molecules"
        )
    shards = featurize_shards(data_dir, workers=workers, progress=False)
    targets, meta = load_scaled_labels(data_dir / LABELS_DIR)
    train_set = PackedGraphs(shards, targets, np.arange(config.val, n))
    val_set = PackedGraphs(shards, targets, np.arange(0, config.val))
    (run / RUN_CONFIG).write_text(json.dumps(asdict(config), indent=2) + "\n")
    for name, src in (
        ("corpus_manifest.json", data_dir / MANIFEST_NAME),
        ("labels_meta.json", data_dir / LABELS_DIR / META_NAME),
    ):
        if src.exists():
            shutil.copyfile(src, run / name)
    featurizer = build_featurizer(FeaturizerConfig())
    model_config = config.model_config(featurizer.node_dim, featurizer.edge_dim, targets.shape[1])
    L.seed_everything(config.seed, workers=True, verbose=False)
    steps_per_epoch = math.ceil(len(train_set) / config.batch_size)
    module = FoundationModule(
        model_config.to_dict(),
        {k: getattr(config, k) for k in ("lr", "weight_decay", "warmup_steps", "lr_floor")},
        steps_per_epoch * config.epochs,
    )
    runlog = RunLog(run, config.checkpoint_minutes, every=progress_every)
    trainer = L.Trainer(
        max_epochs=config.epochs,
        max_steps=max_steps,
        accelerator=accelerator,
        devices=devices,
        num_nodes=num_nodes,
        strategy=strategy,
        callbacks=[runlog],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        use_distributed_sampler=False,
        val_check_interval=min(config.val_every, steps_per_epoch),
        check_val_every_n_epoch=1,
        gradient_clip_val=1.0,
    )
    sampler = ResumableBatchSampler(
        train_set.sizes(),
        config.batch_size,
        shuffle=True,
        seed=config.seed,
        num_replicas=trainer.world_size,
        rank=trainer.global_rank,
    )
    train_loader = DataLoader(
        train_set, batch_sampler=sampler, collate_fn=train_set.collate, num_workers=0
    )
    val_sampler = SizeBucketBatchSampler(val_set.sizes(), 256, shuffle=False)
    val_loader = DataLoader(
        val_set, batch_sampler=val_sampler, collate_fn=val_set.collate, num_workers=0
    )
    last = run / CHECKPOINTS / LAST
    ckpt = None
    if last.exists():
        ckpt = str(last)
        state = torch.load(last, map_location="cpu", weights_only=False)
        done = int(state["loops"]["fit_loop"]["epoch_loop.batch_progress"]["current"]["completed"])
        if 0 < done < steps_per_epoch:
            sampler.skip = done
        log.info("resuming %s: epoch %d, step %d", last, state["epoch"] + 1, state["global_step"])
        print(f"resuming from {last}: epoch {state['epoch'] + 1}, step {state['global_step']}")
    print(
        f"pretraining: {len(train_set)} train / {len(val_set)} validation molecules, "
        f"{targets.shape[1]} descriptors, {steps_per_epoch} batches per epoch, "
        f"{config.epochs} epochs, hidden {config.hidden}, world size {trainer.world_size}",
        flush=True,
    )
    with warnings.catch_warnings():
        # a resume inside an epoch skips the trained batches itself (ResumableBatchSampler)
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended")
        trainer.fit(module, train_loader, val_loader, ckpt_path=ckpt)
    return run


def export_foundation(
    run_dir: str | Path,
    out_dir: str | Path,
    checkpoint: str | Path | None = None,
    name: str = "foundation",
) -> Path:
    """Write the checkpoint's model (default RUN/checkpoints/last.ckpt) as a molprop artifact
    in ``out_dir``: config.json, members/0/model.safetensors, metrics.json and card.md."""
    run = Path(run_dir)
    path = Path(checkpoint) if checkpoint else run / CHECKPOINTS / LAST
    if not path.exists():
        raise ConfigError(f"no checkpoint {path}: pretrain first")
    # the checkpoint is this run's own file; only tensors and plain values are read back
    state = torch.load(path, map_location="cpu", weights_only=True)
    hp = state["hyper_parameters"]
    model_config = ModelConfig.from_dict(hp["model_config"])
    model = MolPropModel.from_config(model_config)
    prefix = "model."
    model.load_state_dict(
        {k[len(prefix) :]: v for k, v in state["state_dict"].items()}, strict=True
    )
    config = PretrainConfig.from_dict(json.loads((run / RUN_CONFIG).read_text()))
    labels = json.loads((run / "labels_meta.json").read_text())
    corpus = json.loads((run / "corpus_manifest.json").read_text())
    if len(labels["names"]) != model_config.n_tasks:
        raise ConfigError("the run's labels do not match its checkpoint")
    task = TaskConfig(
        target_names=tuple(labels["names"]),
        units=tuple("RDKit descriptor" for _ in labels["names"]),
        scaler_mean=tuple(labels["median"]),
        scaler_std=tuple(labels["scale"]),
    )
    train = TrainConfig(
        epochs=int(state["epoch"]) + 1,
        batch_size=config.batch_size,
        lr=config.lr,
        seed=config.seed,
    )
    artifact = ArtifactConfig(
        model=model_config,
        task=task,
        featurizer=FeaturizerConfig(),
        train=train,
        name=name,
        provenance=Provenance(
            data="foundation corpus (molprop foundation data)", split_type="random"
        ),
    )
    out = Artifact(Path(out_dir)).save(artifact, [model.eval()])
    rows = []
    if (run / METRICS_CSV).exists():
        with open(run / METRICS_CSV, newline="") as fh:
            rows = list(csv.DictReader(fh))
    compute = dict(state.get("foundation_compute", {}))
    summary = {
        "epochs_run": int(state["epoch"]) + 1,
        "global_step": int(state["global_step"]),
        "val_loss": float(rows[-1]["val_loss"]) if rows else None,
        "val_mae": float(rows[-1]["val_mae"]) if rows else None,
        "train_molecules": (config.molecules or labels["n_molecules"]) - config.val,
        "val_molecules": config.val,
        **compute,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    out.write_metrics({"training": {"foundation": summary}})
    out.write_foundation_card(corpus=corpus, labels=labels, summary=summary)
    return out.directory


__all__ = [
    "FoundationModule",
    "PackedGraphs",
    "PretrainConfig",
    "export_foundation",
    "featurize_shards",
    "lr_factor",
    "pack_graphs",
    "pretrain",
]
