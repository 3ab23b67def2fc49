"""A panel answered in worker processes (``molprop predict --model <panel> --num-workers N``).

Most of a panel's time per molecule is single-threaded RDKit work (parsing, featurising,
fingerprints, physchem and structural alerts), so a panel scales with processes, not threads.
Each worker is spawned with one torch thread, loads the panel once, and predicts slices of
the rows; the slices come back in input order. Every molecule is answered by the same models
as in one process; only the batches differ, so float32 outputs may differ in their last
digits, as they do between two ``--batch-size`` values.

Without workers the models run in this process and, on a machine with more than one core, the
physchem block (single-threaded RDKit, about half of a panel's work per molecule) of each
slice of at least :data:`PHYSCHEM_APART_MIN_ROWS` rows is computed meanwhile in one spawned
process; the output is exactly the one-process output.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pandas as pd

from molprop.inference.panel import Panel
from molprop.inference.workers import WorkerPool

_WORKER_PANEL: Panel | None = None
#: the fewest rows whose physchem block is worth a process of its own (start-up ~1 s)
PHYSCHEM_APART_MIN_ROWS = 500


def _init_worker(name: str, backend: str) -> None:
    global _WORKER_PANEL
    import torch

    torch.set_num_threads(1)
    _WORKER_PANEL = Panel.from_name(name, backend=backend)  # type: ignore[arg-type]


def _predict_in_worker(
    smiles: list[str], interval: float | str | None, batch_size: int
) -> pd.DataFrame:
    assert _WORKER_PANEL is not None, "worker not initialised"
    return _WORKER_PANEL.predict(smiles, interval, batch_size)


class PanelPool(WorkerPool):
    """``panel`` (loaded here for its columns and checks) answered by ``num_workers`` spawned
    processes that each load ``name`` with ``backend``; 0 workers: in this process."""

    def __init__(self, panel: Panel, name: str, backend: str, num_workers: int) -> None:
        super().__init__(num_workers, _init_worker, (name, backend))
        self.panel = panel
        self.physchem_executor: ProcessPoolExecutor | None = None

    def predict(
        self, smiles: list[str], interval: float | str | None, batch_size: int
    ) -> pd.DataFrame:
        """:meth:`Panel.predict` of ``smiles``, in slices across the workers, in order."""
        if self.executor is None or len(smiles) < 2:
            return self.panel.predict(
                smiles, interval, batch_size, physchem_executor=self._physchem_apart(smiles)
            )
        futures = self.submit_slices(_predict_in_worker, smiles, interval, batch_size)
        return pd.concat([f.result() for f in futures], ignore_index=True)

    def _physchem_apart(self, smiles: list[str]) -> ProcessPoolExecutor | None:
        """The process that computes the physchem block of ``smiles`` beside the models, or
        None where it would not pay (few rows, one core, workers, no physchem block)."""
        if (
            self.executor is not None
            or not self.panel.physchem
            or len(smiles) < PHYSCHEM_APART_MIN_ROWS
            or (os.cpu_count() or 1) < 2
        ):
            return None
        if self.physchem_executor is None:
            self.physchem_executor = ProcessPoolExecutor(1, mp_context=get_context("spawn"))
        return self.physchem_executor

    def close(self) -> None:
        super().close()
        if self.physchem_executor is not None:
            self.physchem_executor.shutdown(wait=True, cancel_futures=True)


__all__ = ["PanelPool"]
