"""The worker processes the featurising pool and the panel's pool share
(molprop.inference.workers): slices in input order, two per worker, each process set up once
with one OpenMP thread unless the environment says otherwise."""

from __future__ import annotations

import os

import pytest

from molprop.inference.workers import WorkerPool


def _remember(value: str) -> None:
    os.environ["MOLPROP_TEST_WORKER"] = value


def _rows_seen(rows: list[int], tag: str) -> list[tuple[int, str, str | None, str | None, int]]:
    env = os.environ
    return [
        (row, tag, env.get("MOLPROP_TEST_WORKER"), env.get("OMP_NUM_THREADS"), os.getpid())
        for row in rows
    ]


def test_slices_come_back_in_order_from_set_up_workers() -> None:
    with WorkerPool(2, _remember, ("set up",)) as pool:
        futures = pool.submit_slices(_rows_seen, list(range(8)), "t")
        assert len(futures) == 4  # two slices per worker
        seen = [item for future in futures for item in future.result()]
    assert [row for row, *_ in seen] == list(range(8))
    assert {(tag, init) for _, tag, init, _, _ in seen} == {("t", "set up")}
    assert {threads for *_, threads, _ in seen} == {os.environ.get("OMP_NUM_THREADS", "1")}
    assert os.getpid() not in {pid for *_, pid in seen}
    with pytest.raises(RuntimeError, match="shutdown"):  # leaving the block closed the pool
        pool.submit_slices(_rows_seen, [1], "t")


def test_few_rows_and_no_workers() -> None:
    with WorkerPool(3, _remember, ("x",)) as pool:
        assert pool.submit_slices(_rows_seen, [], "t") == []
        futures = pool.submit_slices(_rows_seen, [7, 8], "t")
        assert [len(f.result()) for f in futures] == [1, 1]
    with WorkerPool(0, _remember, ("x",)) as none:
        assert none.executor is None
        with pytest.raises(RuntimeError, match="its own process"):
            none.submit_slices(_rows_seen, [1], "t")
