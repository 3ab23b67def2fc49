"""Per-epoch training checkpoints as safetensors + JSON, and resuming from them.

Lightning's ``.ckpt`` is a pickle; our artifact rule is that loading never unpickles, so the
resume state is split into tensors (``state.safetensors``) and plain values (``state.json``)::

    DIR/state.safetensors   model.*  optim.<param>.<key>  best.*  ema.*  rng.torch  rng.numpy
    DIR/state.json          epochs_done, global_step, optimizer param groups and scalar state,
                            scheduler (ReduceLROnPlateau) and early-stopping state, best
                            score/epoch, python/numpy RNG scalars, the TrainConfig used
    DIR/final.safetensors   weights of a finished member (best epoch restored) + final.json

The state is written at the start of each epoch (after the previous epoch's validation,
early-stopping and learning-rate updates, before the shuffle of the new epoch is drawn), so a
run killed anywhere in epoch ``e`` resumes at the start of epoch ``e`` with the same model,
optimiser, scheduler, early-stopping counters, RNG states and sampler epoch (the sampler is
seeded by ``seed + epoch`` through ``set_epoch``) and replays exactly what the uninterrupted
run would have done. Files are written to a temporary name and renamed (atomic).
"""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import Checkpoint
from safetensors.torch import load_file, save_file

from molprop.errors import ConfigError
from molprop.models.config import ModelConfig, TrainConfig
from molprop.training.lightning_module import LitMolProp

log = logging.getLogger(__name__)

STATE_TENSORS, STATE_JSON = "state.safetensors", "state.json"
FINAL_TENSORS, FINAL_JSON = "final.safetensors", "final.json"
#: TrainConfig fields that may differ between the interrupted and the resumed run
RUN_ONLY_FIELDS = ("resume", "devices", "num_nodes", "strategy")


def _atomic_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _atomic_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp))
    os.replace(tmp, path)


def comparable_config(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k not in RUN_ONLY_FIELDS}


def _split_optimizer(state: dict) -> tuple[dict[str, torch.Tensor], dict]:
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, entry in state["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{pid}.{key}"] = value
            else:
                scalars.setdefault(str(pid), {})[key] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def _join_optimizer(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = value
    for pid, entry in meta["scalars"].items():
        state.setdefault(int(pid), {}).update(entry)
    return {"state": state, "param_groups": meta["param_groups"]}


def _plain(value: Any) -> Any:
    """Scheduler / early-stopping state -> JSON-safe values (0-d tensors become floats)."""
    if isinstance(value, torch.Tensor):
        return float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class EpochStateCheckpoint(Checkpoint):
    """Writes the resume state each epoch (rank 0 only) and restores it at train start.

    A ``Checkpoint`` subclass so that Lightning runs it after the other callbacks.
    """

    def __init__(self, directory: Path, train_config: dict, resume: bool) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.train_config = comparable_config(train_config)
        self.resume = resume
        self.start_epoch = 0

    # -- saving ----------------------------------------------------------------------------
    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # Lightning calls set_epoch on samplers but not on batch samplers: the shuffle of
        # epoch e must be drawn with seed + e also when the run started at e (resume)
        batch_sampler = getattr(trainer.train_dataloader, "batch_sampler", None)
        set_epoch = getattr(batch_sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(trainer.current_epoch)
        if trainer.current_epoch > self.start_epoch and trainer.is_global_zero:
            assert isinstance(pl_module, LitMolProp)  # fit_member's module
            self.save(trainer, pl_module)

    def save(self, trainer: L.Trainer, lit: LitMolProp) -> None:
        model_config = lit.model.config
        assert model_config is not None  # fit_member's model is built from its config
        self.directory.mkdir(parents=True, exist_ok=True)
        tensors = {f"model.{k}": v for k, v in lit.model.state_dict().items()}
        opt_tensors, opt_meta = _split_optimizer(trainer.optimizers[0].state_dict())
        tensors.update(opt_tensors)
        if lit.best_state is not None:
            tensors.update({f"best.{k}": v for k, v in lit.best_state.items()})
        tensors.update({f"ema.{k}": v for k, v in lit.ema.items()})
        tensors["rng.torch"] = torch.get_rng_state()
        np_state = np.random.get_state(legacy=True)  # numpy's default, named for its stub
        assert isinstance(np_state, tuple)  # the global generator is an MT19937
        tensors["rng.numpy"] = torch.from_numpy(np.asarray(np_state[1], dtype=np.int64))
        py_state = random.getstate()
        meta = {
            "epochs_done": trainer.current_epoch,
            "global_step": trainer.global_step,
            "optimizer": opt_meta,
            "scheduler": _plain(trainer.lr_scheduler_configs[0].scheduler.state_dict()),
            "early_stopping": [_plain(cb.state_dict()) for cb in trainer.early_stopping_callbacks],
            "best_score": lit.best_score,
            "best_epoch": lit.best_epoch,
            "ema_norm": lit.ema_norm,
            "rng_numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])],
            "rng_python": [py_state[0], list(py_state[1]), py_state[2]],
            "train_config": self.train_config,
            "model_config": model_config.to_dict(),
        }
        _atomic_tensors(self.directory / STATE_TENSORS, tensors)
        _atomic_json(self.directory / STATE_JSON, meta)
        log.debug("checkpoint: %d epochs done -> %s", meta["epochs_done"], self.directory)

    # -- restoring -------------------------------------------------------------------------
    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.resume and (self.directory / STATE_JSON).exists():
            assert isinstance(pl_module, LitMolProp)  # fit_member's module
            self.restore(trainer, pl_module)

    def restore(self, trainer: L.Trainer, lit: LitMolProp) -> None:
        model_config = lit.model.config
        assert model_config is not None  # fit_member's model is built from its config
        meta = json.loads((self.directory / STATE_JSON).read_text())
        # saved settings read as this release reads them (legacy keys mapped, defaults filled)
        saved = {
            "train_config": comparable_config(
                TrainConfig.from_dict(meta["train_config"]).to_dict()
            ),
            "model_config": ModelConfig.from_dict(meta["model_config"]).to_dict(),
        }
        for key, now in (
            ("train_config", self.train_config),
            ("model_config", model_config.to_dict()),
        ):
            if saved[key] != now:
                keys = sorted(set(saved[key]) | set(now))
                diff = {
                    k: (saved[key].get(k), now.get(k))
                    for k in keys
                    if saved[key].get(k) != now.get(k)
                }
                raise ConfigError(
                    f"cannot resume from {self.directory}: settings differ (saved, now): {diff}"
                )
        tensors = load_file(str(self.directory / STATE_TENSORS))
        model_state = {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}
        lit.model.load_state_dict(model_state, strict=True)
        trainer.optimizers[0].load_state_dict(_join_optimizer(tensors, meta["optimizer"]))
        trainer.lr_scheduler_configs[0].scheduler.load_state_dict(meta["scheduler"])
        for cb, state in zip(trainer.early_stopping_callbacks, meta["early_stopping"], strict=True):
            state["best_score"] = torch.tensor(state["best_score"])
            cb.load_state_dict(state)
        best = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")}
        lit.best_state = best or None
        lit.best_score, lit.best_epoch = meta["best_score"], meta["best_epoch"]
        lit.ema = {k[4:]: v.to(lit.device) for k, v in tensors.items() if k.startswith("ema.")}
        lit.ema_norm = float(meta.get("ema_norm", 0.0))
        torch.set_rng_state(tensors["rng.torch"])
        name, pos, has_gauss, cached = meta["rng_numpy"]
        np.random.set_state(
            (name, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss, cached)
        )
        version, internal, gauss = meta["rng_python"]
        random.setstate((version, tuple(internal), gauss))
        epochs = int(meta["epochs_done"])
        progress = trainer.fit_loop.epoch_progress
        for counter in (progress.current, progress.total):
            # Lightning declares these trackers as _ReadyCompletedTracker; the epoch progress
            # holds _ProcessedTracker instances (with started and processed)
            counter.ready = counter.completed = epochs
            counter.started = counter.processed = epochs  # type: ignore[attr-defined]
        loop = trainer.fit_loop.epoch_loop
        steps = int(meta["global_step"])
        loop.automatic_optimization.optim_progress.optimizer.step.total.completed = steps
        loop._batches_that_stepped = steps
        self.start_epoch = epochs
        log.info("resumed from %s after %d epoch(s)", self.directory, epochs)


def save_final(directory: Path, model: torch.nn.Module, summary: dict) -> None:
    """Mark a member as finished (weights of its best epoch + its training summary)."""
    directory.mkdir(parents=True, exist_ok=True)
    _atomic_tensors(directory / FINAL_TENSORS, dict(model.state_dict()))
    _atomic_json(directory / FINAL_JSON, summary)


def load_final(directory: Path, model: torch.nn.Module) -> dict | None:
    """Weights and summary of a finished member, or None if it has not finished."""
    if not (directory / FINAL_JSON).exists():
        return None
    model.load_state_dict(load_file(str(directory / FINAL_TENSORS)), strict=True)
    return json.loads((directory / FINAL_JSON).read_text())
