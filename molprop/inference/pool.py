"""Featurisation in worker processes, results in input order (``molprop predict --num-workers``).

Stages 1-2 of the prediction pipeline (:mod:`molprop.inference.pipeline`) in other processes:
each worker builds the model's featuriser once from its :class:`FeaturizerConfig` (processes
are spawned, ``OMP_NUM_THREADS=1`` unless set), behind the same chemistry checks
(:class:`~molprop.inference.screen.ScreenedFeaturizer`), and runs the pipeline's per-row
function (:func:`~molprop.inference.screen.screened_row`) over slices of a chunk's SMILES; a
failed row comes back as its exception, in place (see :func:`molprop.io.table.featurize_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.inference.screen import ScreenedFeaturizer, screened_row
from molprop.inference.workers import WorkerPool
from molprop.io.readers import Item
from molprop.io.table import featurize_rows

_WORKER_FEATURIZER: ScreenedFeaturizer | None = None


def _init_worker(config: dict, elements: frozenset[str] | None) -> None:
    global _WORKER_FEATURIZER
    featurizer = build_featurizer(FeaturizerConfig.from_dict(config))
    _WORKER_FEATURIZER = ScreenedFeaturizer(featurizer, elements)


def _featurize_in_worker(smiles: list[str]) -> list[Item]:
    assert _WORKER_FEATURIZER is not None  # set by the pool's initializer
    return featurize_rows(smiles, screened_row(_WORKER_FEATURIZER))


class FeaturizerPool(WorkerPool):
    """Featurises lists of SMILES in ``num_workers`` processes (0: in this process) with
    ``featurizer`` (the predictor's screened featuriser; workers rebuild it from
    ``featurizer_config`` and its elements).

    ``submit`` returns futures whose results concatenate, in order, to one item per SMILES.
    ``should_stop``: asked before each row featurised in this process (``num_workers=0``);
    when it returns true :class:`~molprop.errors.PredictionCancelled` is raised.
    """

    def __init__(
        self,
        featurizer: ScreenedFeaturizer,
        featurizer_config: dict,
        num_workers: int = 0,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(num_workers, _init_worker, (featurizer_config, featurizer.elements))
        self.featurizer = featurizer
        self.should_stop = should_stop

    def submit(self, smiles: list[str]) -> list[Future]:
        if self.executor is None:
            done: Future = Future()
            featurize_one = screened_row(self.featurizer, should_stop=self.should_stop)
            done.set_result(featurize_rows(smiles, featurize_one))
            return [done]
        return self.submit_slices(_featurize_in_worker, smiles)


__all__ = ["FeaturizerPool"]
