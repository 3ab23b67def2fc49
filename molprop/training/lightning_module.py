"""Lightning wrapper: masked loss, AdamW, the LR schedule (ReduceLROnPlateau halving, or
per-step warm-up + exponential decay to a floor: :func:`warmup_decay_factor`), weight
averaging (EMA), best-weight tracking.

Weight decay (``weight_decay_on``): ``"matrices"`` decays only the ``weight`` matrices of
``nn.Linear`` layers (nanoGPT-style groups; see :func:`decay_split`); biases, LayerNorm weights
and biases, the PMA seed vectors and the learnable distance-basis centres / widths are not
pulled towards 0 (a LayerNorm gain of 0 or a seed at the origin is no simpler a model). ``"all"``
decays every trainable parameter (the earlier behaviour, kept by the shipped recipes).

Weight averaging: with ``ema_epochs`` E > 0 the module keeps an exponential moving average of
the trainable weights, updated after every optimiser step with decay ``1 - 1 / (E * steps per
epoch)`` and bias-corrected (the average starts empty, not at the initial weights, as Adam's
moments do). Validation, early stopping, the LR schedule and the kept best weights all use the
averaged weights; training continues from the raw ones. At a constant learning rate the raw
weights jitter from step to step, so the per-epoch validation loss of the raw weights is noisy
and picking its minimum partly picks noise (benchmarks/notes.md: Lipophilicity); the average
over the last ~E epochs is what a decaying learning rate would converge to.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import lightning as L
import torch
from lightning.pytorch.trainer.states import TrainerFn
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.errors import ConfigError
from molprop.models.config import (
    LOSSES,
    SCHEDULES,
    TASK_TYPES,
    WEIGHT_DECAY_ON,
    Schedule,
    TaskType,
    WeightDecayOn,
    check_choice,
)
from molprop.models.model import MolPropModel
from molprop.nn.heads import RegressionLoss, masked_loss

#: Module types whose ``weight`` is decayed with ``weight_decay_on="matrices"``.
DECAYED_MODULES: tuple[type[nn.Module], ...] = (nn.Linear, nn.Embedding)


def decay_split(model: nn.Module) -> tuple[list[str], list[str]]:
    """Names of the trainable parameters (``requires_grad``) that weight decay applies to -- the
    ``weight`` of every :data:`DECAYED_MODULES` layer -- and of the other trainable ones (biases,
    LayerNorm weights and biases, PMA seeds, distance-basis centres / widths), each in
    ``named_parameters`` order. Frozen parameters are in neither list."""
    matrices = {id(m.weight) for m in model.modules() if isinstance(m, DECAYED_MODULES)}
    decay: list[str] = []
    rest: list[str] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (decay if id(p) in matrices else rest).append(name)
    return decay, rest


def optimizer_groups(
    model: nn.Module, weight_decay: float, decay_on: WeightDecayOn = "matrices"
) -> list[dict]:
    """AdamW parameter groups: ``"all"`` one group of every trainable parameter with
    ``weight_decay``; ``"matrices"`` the :func:`decay_split` groups (decay, then 0). Empty
    groups are left out."""
    check_choice("weight_decay_on", decay_on, WEIGHT_DECAY_ON)
    params = dict(model.named_parameters())
    if decay_on == "all":
        groups = [([p for p in params.values() if p.requires_grad], weight_decay)]
    else:
        decay, rest = decay_split(model)
        groups = [([params[n] for n in decay], weight_decay), ([params[n] for n in rest], 0.0)]
    return [{"params": ps, "weight_decay": wd} for ps, wd in groups if ps]


def warmup_decay_factor(step: int, warmup_steps: int, total_steps: int, floor: float) -> float:
    """LR multiplier of the ``warmup_decay`` schedule at optimiser step ``step``: linear from
    ``floor`` to 1 over ``warmup_steps``, then ``floor ** t`` with t going 0 -> 1 from the end
    of the warm-up to ``total_steps`` (exponential decay to ``floor``), ``floor`` after.

    With lr 1e-3, floor 0.1 and 2 warm-up epochs this is chemprop's default Noam-like schedule
    (1e-4 -> 1e-3 -> 1e-4)."""
    if step < warmup_steps:
        return floor + (1.0 - floor) * step / warmup_steps
    if total_steps <= warmup_steps:
        return 1.0
    t = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return floor**t


class LitMolProp(L.LightningModule):
    """Trains a :class:`MolPropModel` with the loss of ``task_type`` (``TaskConfig.task_type``:
    ``loss`` -- squared / absolute error or Huber -- on standardised targets, or BCE with logits;
    a classification task with a loss other than the default is a ConfigError). Only parameters with
    ``requires_grad`` are optimised (so a frozen encoder stays bit-identical), and a frozen
    encoder (no weight with ``requires_grad``) stays in eval mode, dropout off (:meth:`train`).

    ``start_loader`` (fine-tuning from trained weights; set by ``fit_member``): the starting
    weights are scored on that validation loader before the first step and compete with every
    epoch for the kept best (``best_epoch`` -1 when no epoch beats them), so a fine-tune never
    ends worse on validation than the model it started from."""

    def __init__(
        self,
        model: MolPropModel,
        task_type: TaskType,
        lr: float = 1e-4,
        weight_decay: float = 1e-2,
        lr_patience: int = 8,
        monitor: str = "val_loss",
        ema_epochs: float = 0.0,
        weight_decay_on: WeightDecayOn = "matrices",
        schedule: Schedule = "plateau",
        warmup_epochs: float = 0.0,
        lr_floor: float = 0.1,
        loss: RegressionLoss = "mse",
    ):
        super().__init__()
        check_choice("schedule", schedule, SCHEDULES)
        check_choice("loss", loss, LOSSES)
        if task_type == "classification" and loss != "mse":
            raise ConfigError(
                f"loss {loss!r}: classification tasks are trained with binary cross-entropy; "
                "the loss option applies to regression only"
            )
        self.schedule = schedule
        self.warmup_epochs = float(warmup_epochs)
        self.lr_floor = float(lr_floor)
        self.loss = loss
        self.model = model
        self.lr = lr
        self.weight_decay = weight_decay
        check_choice("weight_decay_on", weight_decay_on, WEIGHT_DECAY_ON)
        self.weight_decay_on = weight_decay_on
        self.lr_patience = lr_patience
        self.monitor = monitor
        check_choice("task type", task_type, TASK_TYPES)
        self.task_type = task_type
        self.best_score = float("inf")
        self.best_state: dict[str, torch.Tensor] | None = None
        self.best_epoch = -1
        self.start_loader: Iterable[GraphBatch] | None = None
        self.start_score: float | None = None
        self.ema_epochs = float(ema_epochs)
        self.ema: dict[str, torch.Tensor] = {}  # name -> running sum (not yet bias-corrected)
        self.ema_norm = 0.0  # sum of the weights given so far (bias correction)
        self._raw: list[torch.Tensor] | None = None

    def train(self, mode: bool = True) -> LitMolProp:
        """Set train / eval mode; a frozen encoder stays in eval mode."""
        super().train(mode)
        encoder = self.model.encoder
        if mode and not any(p.requires_grad for p in encoder.parameters()):
            encoder.eval()
        return self

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        return self.model(batch)

    def _loss(self, batch: GraphBatch) -> torch.Tensor:
        pred = self.model(batch).float()
        y, y_mask = batch.labels()
        return masked_loss(pred, y, y_mask, self.task_type, self.loss)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):  # noqa: D102
        return batch.to(device) if isinstance(batch, GraphBatch) else batch

    def training_step(self, batch: GraphBatch, batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log(
            "train_loss",
            loss,
            on_step=False,
            on_epoch=True,
            prog_bar=True,
            batch_size=batch.num_graphs,
            sync_dist=True,
        )
        return loss

    def validation_step(self, batch: GraphBatch, batch_idx: int) -> None:
        loss = self._loss(batch)
        self.log(
            "val_loss",
            loss,
            on_step=False,
            on_epoch=True,
            prog_bar=True,
            batch_size=batch.num_graphs,
            sync_dist=True,
        )

    # -- weight averaging ------------------------------------------------------------------
    @property
    def uses_ema(self) -> bool:
        """Averaging is on when asked for and a validation set decides (monitor val_loss)."""
        return self.ema_epochs > 0 and self.monitor == "val_loss"

    def _trainable(self) -> list[tuple[str, torch.nn.Parameter]]:
        return [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]

    def ema_decay(self) -> float:
        steps = max(1, int(self.trainer.num_training_batches))
        return 1.0 - 1.0 / max(1.0, self.ema_epochs * steps)

    def on_train_batch_end(self, outputs, batch, batch_idx: int) -> None:  # noqa: D102
        if not self.uses_ema:
            return
        d = self.ema_decay()
        with torch.no_grad():
            named = self._trainable()
            if not self.ema:
                self.ema = {n: torch.zeros_like(p) for n, p in named}
            sums = [self.ema[n] for n, _ in named]
            torch._foreach_mul_(sums, d)
            torch._foreach_add_(sums, [p.detach() for _, p in named], alpha=1.0 - d)
        self.ema_norm = d * self.ema_norm + (1.0 - d)

    def averaged_weights(self) -> dict[str, torch.Tensor]:
        """Bias-corrected average of each trainable weight (empty before the first step)."""
        if not self.ema or self.ema_norm <= 0:
            return {}
        return {n: s / self.ema_norm for n, s in self.ema.items()}

    def on_validation_epoch_start(self) -> None:
        fitting = self.trainer.state.fn == TrainerFn.FITTING
        averaged = self.averaged_weights() if self.uses_ema and fitting else {}
        if not averaged:
            return
        named = self._trainable()
        self._raw = [p.detach().clone() for _, p in named]
        with torch.no_grad():
            for n, p in named:
                p.copy_(averaged[n])

    def on_validation_epoch_end(self) -> None:
        if self._raw is not None:
            with torch.no_grad():
                for (_, p), raw in zip(self._trainable(), self._raw, strict=True):
                    p.copy_(raw)
            self._raw = None

    def _scored_state(self) -> dict[str, torch.Tensor]:
        """A copy of the weights the monitored loss was computed with: the averaged ones when
        validating with EMA (no step happens between validation and epoch end, so the average
        is still the validated one), else the current ones."""
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        if self.uses_ema:
            state.update({k: v.cpu() for k, v in self.averaged_weights().items()})
        return copy.deepcopy(state)

    # -- best weights ----------------------------------------------------------------------
    def on_train_start(self) -> None:
        """Score the starting weights on ``start_loader``. Runs after the resume callback's
        ``on_train_start``, so a resumed run keeps the best it had (which may be the start)."""
        if self.start_loader is None or self.monitor != "val_loss" or self.best_state is not None:
            return
        was_training = {m: m.training for m in self.model.modules()}
        self.model.eval()
        total, count = 0.0, 0
        rng = torch.get_rng_state()  # a DataLoader iterator draws its seed from it
        with torch.no_grad():  # the batch-size-weighted mean Lightning logs as val_loss
            for batch in self.start_loader:
                batch = batch.to(self.device)
                total += float(self._loss(batch)) * batch.num_graphs
                count += batch.num_graphs
        torch.set_rng_state(rng)  # training then draws what it drew without the candidate
        for module, training in was_training.items():  # each as it was (a frozen part: eval)
            module.training = training
        if count:
            self.start_score = total / count
            self.best_score, self.best_epoch = self.start_score, -1
            self.best_state = self._scored_state()

    def on_train_epoch_end(self) -> None:
        metric = self.trainer.callback_metrics.get(self.monitor)
        if metric is None:
            return
        score = float(metric)
        if score < self.best_score:
            self.best_score = score
            self.best_epoch = self.current_epoch
            self.best_state = self._scored_state()
        optimizer = self.optimizers()
        assert not isinstance(optimizer, list)  # configure_optimizers gives one
        self.log("lr", optimizer.param_groups[0]["lr"], on_epoch=True, sync_dist=True)

    def restore_best(self) -> None:
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)

    def configure_optimizers(self):
        groups = optimizer_groups(self.model, self.weight_decay, self.weight_decay_on)
        opt = torch.optim.AdamW(groups, lr=self.lr)
        if self.schedule == "warmup_decay":
            total = int(self.trainer.estimated_stepping_batches)
            per_epoch = total / max(1, self.trainer.max_epochs or 1)
            warmup = round(self.warmup_epochs * per_epoch)
            floor = self.lr_floor
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda step: warmup_decay_factor(step, warmup, total, floor)
            )
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="min", factor=0.5, patience=self.lr_patience, min_lr=1e-6
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": plateau, "monitor": self.monitor}}
