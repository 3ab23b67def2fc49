"""molprop benchmarks against chemprop v2 and PyG GIN/PNA (outside the unit suite).

Run everything with ``python -m benchmarks.run_all`` (``make bench``); each module also runs
alone (``python -m benchmarks.accuracy --help``). Results go to ``benchmarks/results/*.json``,
``benchmarks/RESULTS.md`` and PNG plots in ``benchmarks/plots/``.
"""
