"""Shared training machinery: fit one member with Lightning, evaluate members on a split."""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities.exceptions import SIGTERMException

from molprop.data.loader import GraphDataset, make_loader
from molprop.errors import TrainingInterrupted
from molprop.graph import MolGraph
from molprop.models.config import ModelConfig, TaskConfig, TaskType, TrainConfig
from molprop.models.model import MolPropModel
from molprop.models.predict import predict_targets
from molprop.training.lightning_module import LitMolProp
from molprop.training.metrics import compute_metrics
from molprop.training.resume import EpochStateCheckpoint, load_final, save_final

log = logging.getLogger(__name__)

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.WARNING)
warnings.filterwarnings("ignore", ".*does not have many workers.*")
warnings.filterwarnings("ignore", ".*number of training batches.*")


def fit_member(
    model: MolPropModel,
    train: GraphDataset,
    val: GraphDataset | None,
    cfg: TrainConfig,
    seed: int,
    log_dir: Path | None = None,
    progress: bool = True,
    max_epochs: int | None = None,
    *,
    task_type: TaskType,
    extra_callbacks: Sequence[L.Callback] = (),
    start_candidate: bool = False,
) -> tuple[MolPropModel, dict]:
    """Train ``model`` in place (weights of the best validation epoch are restored).

    ``start_candidate`` (fine-tuning trained weights): the starting weights count as "epoch 0"
    of the best-validation choice, so they are kept (summary ``best_epoch`` -1, logged) when no
    epoch beats them on the validation set.

    Without a validation set the training loss is monitored and the last epoch's weights kept
    if it is the best. Returns the model and a summary (best epoch, epochs run, seconds).

    With ``log_dir``, the resume state is written to ``log_dir/checkpoint`` every epoch and
    ``cfg.resume`` continues from it (a finished member is loaded, not retrained); see
    :mod:`molprop.training.resume`. ``extra_callbacks`` join the Trainer's (e.g. a
    hyperparameter search's pruning callback). ``cfg.devices`` / ``num_nodes`` / ``strategy`` select
    Lightning's data parallel training: each rank takes its slice of every global batch; the
    validation set is evaluated whole on every rank, so the monitored loss (and thus early
    stopping, the LR schedule and the kept best weights) is the same on all ranks.
    """
    ckpt_dir = Path(log_dir) / "checkpoint" if log_dir is not None else None
    if ckpt_dir is not None and cfg.resume:
        finished = load_final(ckpt_dir, model)
        if finished is not None:
            log.info("member already trained (%s): loaded, not retrained", ckpt_dir)
            return model.cpu().eval(), finished
    L.seed_everything(seed, workers=True, verbose=False)
    monitor = "val_loss" if val is not None and len(val) > 0 else "train_loss"
    lit = LitMolProp(
        model,
        task_type,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        lr_patience=cfg.lr_patience,
        monitor=monitor,
        ema_epochs=cfg.ema_epochs,
        weight_decay_on=cfg.weight_decay_on,
        schedule=cfg.schedule,
        warmup_epochs=cfg.warmup_epochs,
        lr_floor=cfg.lr_floor,
        loss=cfg.loss,
    )
    callbacks: list = [EarlyStopping(monitor=monitor, patience=cfg.patience, mode="min")]
    callbacks.extend(extra_callbacks)
    if ckpt_dir is not None:
        callbacks.append(EpochStateCheckpoint(ckpt_dir, cfg.to_dict(), cfg.resume))
    logger = CSVLogger(str(log_dir), name="", version="") if log_dir is not None else False
    trainer = L.Trainer(
        max_epochs=max_epochs or cfg.epochs,
        accelerator="auto",
        devices=cfg.devices,
        num_nodes=cfg.num_nodes,
        strategy=cfg.strategy,
        precision="bf16-mixed" if cfg.bf16 else "32-true",
        gradient_clip_val=cfg.grad_clip,
        callbacks=callbacks,
        logger=logger,
        enable_checkpointing=ckpt_dir is not None,  # our EpochStateCheckpoint, never .ckpt
        enable_progress_bar=progress and not os.environ.get("MOLPROP_NO_PROGRESS"),
        enable_model_summary=False,
        num_sanity_val_steps=0,
        use_distributed_sampler=False,
        log_every_n_steps=1,
    )
    train_loader = make_loader(
        train,
        cfg.batch_size,
        shuffle=True,
        seed=seed,
        num_replicas=trainer.world_size,
        rank=trainer.global_rank,
    )
    val_loader = (
        make_loader(val, cfg.batch_size, shuffle=False)
        if val is not None and monitor == "val_loss"
        else None
    )
    if start_candidate:
        lit.start_loader = val_loader
    start = time.perf_counter()
    try:
        trainer.fit(lit, train_loader, val_loader)
    except SIGTERMException as exc:  # a SystemExit with no code: it would exit 0, silently
        kept = (
            f"the finished epochs are checkpointed in {ckpt_dir}: rerun the same command with "
            "--resume to continue"
            if ckpt_dir is not None
            else "this run keeps no checkpoints"
        )
        raise TrainingInterrupted(
            f"training stopped by SIGTERM during epoch {trainer.current_epoch + 1} of "
            f"{trainer.max_epochs}; no model was written; {kept}"
        ) from exc
    seconds = time.perf_counter() - start
    lit.restore_best()
    model.cpu().eval()
    summary = {
        "best_epoch": lit.best_epoch,
        "best_" + monitor: lit.best_score,
        "epochs_run": trainer.current_epoch,
        "seconds": round(seconds, 2),
    }
    if lit.start_score is not None:
        summary["start_" + monitor] = lit.start_score
        if lit.best_epoch == -1:
            log.info(
                "no epoch beat the starting weights on validation (val_loss %.4g): kept them",
                lit.start_score,
            )
    if ckpt_dir is not None and trainer.is_global_zero:
        save_final(ckpt_dir, model, summary)
    log.info("member trained: %s", summary)
    return model, summary


#: ``make_member(index, seed)``: a fresh (or pretrained-initialised) member to train
MemberFactory = Callable[[int, int], MolPropModel]


@dataclass(frozen=True)
class FittedEnsemble:
    """Trained members (best epoch restored, on CPU, eval mode) and, per member, its training
    summary from :func:`fit_member` (best epoch, best monitored loss, epochs run, seconds)."""

    members: list[MolPropModel]
    summaries: list[dict]


def fit_ensemble(
    make_member: MemberFactory,
    train: GraphDataset,
    val: GraphDataset | None,
    cfg: TrainConfig,
    out: Path,
    progress: bool = True,
    *,
    task_type: TaskType,
    start_candidate: bool = False,
) -> FittedEnsemble:
    """Train ``cfg.ensemble_size`` members: member ``m`` is ``make_member(m, cfg.seed + m)``,
    trained by :func:`fit_member` with the same seed, logs (and resume state) in
    ``out/logs/member_m``. An empty ``val`` counts as none (the training loss is monitored).
    ``start_candidate``: see :func:`fit_member`."""
    val = val if val is not None and len(val) > 0 else None
    members, summaries = [], []
    for m in range(cfg.ensemble_size):
        seed = cfg.seed + m
        log.info("training member %d/%d (seed %d)", m + 1, cfg.ensemble_size, seed)
        model, summary = fit_member(
            make_member(m, seed),
            train,
            val,
            cfg,
            seed,
            Path(out) / "logs" / f"member_{m}",
            progress,
            task_type=task_type,
            start_candidate=start_candidate,
        )
        members.append(model)
        summaries.append(summary)
    return FittedEnsemble(members, summaries)


def is_global_zero() -> bool:
    """True outside distributed runs and on global rank 0 (the rank that writes files)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank() == 0
    for name in ("RANK", "SLURM_PROCID"):
        if name in os.environ:
            return int(os.environ[name]) == 0
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


def evaluate_split(
    members: Sequence[MolPropModel],
    graphs: Sequence[MolGraph],
    targets: np.ndarray,
    task: TaskConfig,
    extra: np.ndarray | None = None,
) -> dict:
    """Ensemble and per-member metrics on one part of the data."""
    if len(graphs) == 0:
        return {"ensemble": {"n": 0}, "members": []}
    preds = predict_targets(members, graphs, task, extra)
    names = list(task.target_names)
    return {
        "ensemble": compute_metrics(targets, preds.mean(0), task.task_type, names),
        "members": [compute_metrics(targets, p, task.task_type, names) for p in preds],
    }


def build_model(config: ModelConfig, seed: int) -> MolPropModel:
    torch.manual_seed(seed)
    return MolPropModel.from_config(config)
