"""Prediction on several processes or machines through Lightning (``molprop predict --devices N
[--num-nodes M] --strategy ddp``).

Lightning launches the processes (its subprocess launcher for ``--devices N`` on one machine;
torchrun / SLURM environments for several machines) and runs ``Trainer.predict`` on every rank.
Each rank streams the input and takes every ``world_size``-th chunk (chunk c goes to global rank
``c % world_size``, like a ``DistributedSampler`` over chunks); its DataLoader workers
(``--num-workers``) featurise the chunks, ``predict_step`` predicts one chunk on the rank's
device, and a :class:`~lightning.pytorch.callbacks.BasePredictionWriter` writes it to
``<output>.parts/<first row>_<rows>.csv`` (written to a temporary name, then renamed, so a part
file is always complete). After a barrier, global rank 0 appends the parts to the output in
input order and removes them, so output row i is input row i, as in one process.

Resume (``--resume``): complete rows already in the output and complete part files are kept;
only the missing chunks are predicted. With several machines, the output's directory must be
on a filesystem they share.
"""

from __future__ import annotations

import logging
import os
import re
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import pandas as pd
import torch
from lightning.pytorch.callbacks import BasePredictionWriter
from torch.utils.data import DataLoader, IterableDataset, get_worker_info
from tqdm.auto import tqdm

from molprop.errors import DataError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.inference.screen import ScreenedFeaturizer, screened_row
from molprop.inference.streaming import StreamSummary
from molprop.io.readers import count_records, iter_chunks
from molprop.io.sink import (
    append_checked,
    complete_records,
    csv_records,
    prepare_output,
    release_freed_memory,
)
from molprop.io.table import featurize_rows

log = logging.getLogger(__name__)
# Each step is a whole chunk; its rows are identified by the chunk's first row, not by a sampler.
warnings.filterwarnings("ignore", message=".*Couldn't infer the batch indices.*")

_PART = re.compile(r"^(\d+)_(\d+)\.csv$")


def parts_dir(output: Path) -> Path:
    return output.with_name(output.name + ".parts")


def _part_name(start: int, n: int) -> str:
    return f"{start:012d}_{n}.csv"


def list_parts(directory: Path) -> list[tuple[int, int, Path]]:
    """Complete part files as (first row, rows, path), sorted by first row."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        m = _PART.match(path.name)
        if m:
            found.append((int(m.group(1)), int(m.group(2)), path))
    return sorted(found)


def _identity(batch):
    return batch


@dataclass(frozen=True)
class _Shard:
    """Which chunks this rank (and DataLoader worker) predicts."""

    rank: int
    world_size: int


class ChunkShard(IterableDataset):
    """The chunks of the input assigned to one rank, featurised; chunks whose part file already
    exists (resume) are skipped. Each item is ``(InputChunk, items)``."""

    def __init__(
        self,
        input_path: Path,
        smiles_column: str,
        chunk_size: int,
        skip: int,
        shard: _Shard,
        featurizer_config: dict,
        existing: set[tuple[int, int]],
        elements: frozenset[str] | None = None,
    ) -> None:
        self.input_path, self.smiles_column = Path(input_path), smiles_column
        self.chunk_size, self.skip, self.shard = chunk_size, skip, shard
        self.featurizer_config, self.existing = featurizer_config, existing
        self.elements = elements

    def __iter__(self) -> Iterator[tuple]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        if info is not None:
            torch.set_num_threads(1)
        featurizer = ScreenedFeaturizer(
            build_featurizer(FeaturizerConfig.from_dict(self.featurizer_config)), self.elements
        )
        mine = 0  # index among this rank's chunks -> which worker featurises it
        for c, chunk in enumerate(
            iter_chunks(self.input_path, self.smiles_column, self.chunk_size, skip=self.skip)
        ):
            if c % self.shard.world_size != self.shard.rank:
                continue
            mine += 1
            if (mine - 1) % workers != worker or (chunk.start, len(chunk)) in self.existing:
                continue
            items = featurize_rows(chunk.smiles(self.smiles_column), screened_row(featurizer))
            yield chunk, chunk.with_failures(items)


class ChunkPredictor(L.LightningModule):
    """Wraps a :class:`~molprop.inference.predictor.Predictor` for ``Trainer.predict``: one
    step predicts one chunk and returns ``(first row, output frame)``."""

    def __init__(
        self, predictor, smiles_column: str, batch_size: int, interval: float | None = None
    ) -> None:
        super().__init__()
        self.members = torch.nn.ModuleList(predictor.members)  # moved to the rank's device
        self.predictor = predictor
        self.smiles_column, self.batch_size = smiles_column, batch_size
        self.interval = interval

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # graphs are collated per size bucket inside predict_frame

    def predict_step(self, batch, batch_idx: int):
        chunk, items = batch
        out = self.predictor.predict_frame(
            chunk.frame,
            self.smiles_column,
            self.batch_size,
            items=items,
            device=self.device,
            interval=self.interval,
        )
        return chunk.start, out


class ChunkData(L.LightningDataModule):
    """Runs on every rank once Lightning has launched the processes: rank 0 prepares the parts
    directory, then each rank builds its shard of the input."""

    def __init__(
        self,
        input_path: Path,
        output_path: Path,
        smiles_column: str,
        chunk_size: int,
        num_workers: int,
        resume: bool,
        featurizer_config: dict,
        elements: frozenset[str] | None = None,
    ) -> None:
        super().__init__()
        self.input_path, self.output_path = input_path, output_path
        self.smiles_column, self.chunk_size = smiles_column, chunk_size
        self.num_workers, self.resume = num_workers, resume
        self.featurizer_config, self.elements = featurizer_config, elements
        self.directory = parts_dir(output_path)
        self.done = 0

    def setup(self, stage: str) -> None:
        trainer = self.trainer
        assert trainer is not None  # the Trainer attaches itself before it calls setup
        if trainer.global_rank == 0:
            if not self.resume:
                for _, _, path in list_parts(self.directory):
                    path.unlink()
            self.directory.mkdir(parents=True, exist_ok=True)
        trainer.strategy.barrier("molprop-predict-prepare")
        if self.resume and self.output_path.exists():
            self.done = max(0, complete_records(self.output_path)[0] - 1)
        existing = {(s, n) for s, n, _ in list_parts(self.directory)} if self.resume else set()
        self.dataset = ChunkShard(
            self.input_path,
            self.smiles_column,
            self.chunk_size,
            self.done,
            _Shard(trainer.global_rank, trainer.world_size),
            self.featurizer_config,
            existing,
            self.elements,
        )

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(
            self.dataset, batch_size=None, collate_fn=_identity, num_workers=self.num_workers
        )


class PartWriter(BasePredictionWriter):
    """Writes each predicted chunk to its part file; on global rank 0, shows progress over all
    ranks (rows in part files, molecules/s, ETA); waits for every rank at the end."""

    def __init__(self, directory: Path, input_path: Path, progress: bool) -> None:
        super().__init__(write_interval="batch")
        self.directory, self.input_path, self.progress = directory, input_path, progress
        self.bar: tqdm | None = None

    def on_predict_start(self, trainer, pl_module) -> None:
        if trainer.global_rank == 0 and self.progress:
            done = trainer.datamodule.done
            self.bar = tqdm(
                total=count_records(self.input_path),
                initial=done,
                unit="mol",
                unit_scale=True,
                smoothing=0.1,
                desc=f"predicting ({trainer.world_size} processes)",
            )

    def write_on_batch_end(
        self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx=0
    ) -> None:
        start, frame = prediction
        final = self.directory / _part_name(start, len(frame))
        tmp = final.with_name(f".{final.name}.rank{trainer.global_rank}.tmp")
        tmp.write_bytes(csv_records(frame, header=True).encode("utf-8"))
        os.replace(tmp, final)
        release_freed_memory()
        self._show_progress(trainer.datamodule.done)

    def on_predict_end(self, trainer, pl_module) -> None:
        trainer.strategy.barrier("molprop-predict-written")
        self._show_progress(trainer.datamodule.done)
        if self.bar is not None:
            self.bar.close()

    def _show_progress(self, resumed: int) -> None:
        """Rows done by all ranks = resumed rows + rows in part files."""
        if self.bar is not None:
            rows = resumed + sum(n for _, n, _ in list_parts(self.directory))
            self.bar.update(rows - self.bar.n)


def merge_parts(output: Path, directory: Path, done: int, header: str | None) -> Counter[str]:
    """Append the part files covering rows ``done, done + 1, ...`` to ``output`` in order and
    delete them; -> status counts of the appended rows. A gap (a part missing in the middle) is
    an error."""
    pos, status = done, Counter[str]()
    parts = list_parts(directory)
    for start, n, path in parts:
        if start + n <= pos:  # already in the output (an interrupted merge)
            path.unlink()
            continue
        if start > pos:
            raise DataError(f"prediction parts in {directory} have a gap: no part for row {pos}")
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame = frame.iloc[pos - start :]
        header = append_checked(output, frame, header)
        status.update(frame["status"].tolist())
        pos = start + n
        path.unlink()
    try:
        directory.rmdir()
    except OSError:
        pass
    return status


def predict_distributed(
    predictor,
    input_path: str | Path,
    output_path: str | Path,
    smiles_column: str = "smiles",
    *,
    devices: int | str = 1,
    num_nodes: int = 1,
    strategy: str = "ddp",
    accelerator: str = "auto",
    batch_size: int = 256,
    chunk_size: int = 4096,
    num_workers: int = 0,
    resume: bool = False,
    progress: bool = True,
    interval: float | str | None = 0.9,
) -> StreamSummary | None:
    """Predict ``input_path`` into ``output_path`` on ``devices`` × ``num_nodes`` processes
    (``interval``: see :meth:`~molprop.inference.Predictor.predict`).
    Returns the summary on global rank 0 and None on the other ranks."""
    input_path, output_path = Path(input_path), Path(output_path)
    if not input_path.exists():
        raise DataError(f"input file not found: {input_path}")
    start_time = time.perf_counter()
    data = ChunkData(
        input_path,
        output_path,
        smiles_column,
        chunk_size,
        num_workers,
        resume,
        predictor.config.featurizer.to_dict(),
        predictor.screened.elements,
    )
    trainer = L.Trainer(
        accelerator=accelerator,
        devices=devices,
        num_nodes=num_nodes,
        strategy=strategy,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
        callbacks=[PartWriter(data.directory, input_path, progress)],
    )
    level = predictor.interval_level(interval)  # checked before any process starts
    module = ChunkPredictor(predictor, smiles_column, batch_size, level)
    trainer.predict(module, datamodule=data, return_predictions=False)
    if trainer.global_rank != 0:
        return None
    done, header = prepare_output(output_path, resume)
    status = merge_parts(output_path, data.directory, done, header)
    written = sum(status.values())
    seconds = time.perf_counter() - start_time
    summary = StreamSummary(done + written, done, written, dict(status), seconds)
    log.info(
        "predicted %d rows on %d processes (%d resumed) in %.1f s: %.0f molecules/s",
        summary.rows_total,
        trainer.world_size,
        done,
        seconds,
        summary.molecules_per_second,
    )
    return summary


__all__ = [
    "ChunkData",
    "ChunkPredictor",
    "ChunkShard",
    "PartWriter",
    "merge_parts",
    "predict_distributed",
]
