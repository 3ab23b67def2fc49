"""Lightning wrapper: masked loss, AdamW, ReduceLROnPlateau halving, best-weight tracking."""

from __future__ import annotations

import copy

import lightning as L
import torch

from molprop.data.batch import GraphBatch
from molprop.models.model import MolPropModel
from molprop.nn.heads import masked_loss


class LitMolProp(L.LightningModule):
    """Trains a :class:`MolPropModel`. Only parameters with ``requires_grad`` are optimised
    (so a frozen encoder stays bit-identical)."""

    def __init__(
        self,
        model: MolPropModel,
        lr: float = 1e-4,
        weight_decay: float = 1e-2,
        lr_patience: int = 8,
        monitor: str = "val_loss",
    ):
        super().__init__()
        self.model = model
        self.lr = lr
        self.weight_decay = weight_decay
        self.lr_patience = lr_patience
        self.monitor = monitor
        self.task_type = model.config.task_type
        self.best_score = float("inf")
        self.best_state: dict[str, torch.Tensor] | None = None
        self.best_epoch = -1

    def forward(self, batch: GraphBatch) -> torch.Tensor:
        return self.model(batch)

    def _loss(self, batch: GraphBatch) -> torch.Tensor:
        pred = self.model(batch).float()
        return masked_loss(pred, batch.y, batch.y_mask, self.task_type)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):  # noqa: D102
        return batch.to(device) if isinstance(batch, GraphBatch) else batch

    def training_step(self, batch: GraphBatch, batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True,
                 batch_size=batch.num_graphs, sync_dist=True)  # fmt: skip
        return loss

    def validation_step(self, batch: GraphBatch, batch_idx: int) -> None:
        loss = self._loss(batch)
        self.log("val_loss", loss, on_step=False, on_epoch=True, prog_bar=True,
                 batch_size=batch.num_graphs, sync_dist=True)  # fmt: skip

    def on_train_epoch_end(self) -> None:
        score = self.trainer.callback_metrics.get(self.monitor)
        if score is None:
            return
        score = float(score)
        if score < self.best_score:
            self.best_score = score
            self.best_epoch = self.current_epoch
            self.best_state = copy.deepcopy({k: v.detach().cpu() for k, v in self.model.state_dict().items()})
        self.log("lr", self.optimizers().param_groups[0]["lr"], on_epoch=True, sync_dist=True)

    def restore_best(self) -> None:
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)

    def configure_optimizers(self):
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="min", factor=0.5, patience=self.lr_patience, min_lr=1e-6
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": self.monitor}}
