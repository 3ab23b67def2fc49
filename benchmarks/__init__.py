"""molprop benchmarks against chemprop v2 and PyG GIN/PNA (outside the unit suite).

One entry point: ``python -m benchmarks --list`` lists every benchmark with the pages whose
numbers it produces (:mod:`benchmarks.targets`), ``python -m benchmarks NAME [ARGS]`` runs one,
``python -m benchmarks all`` the suite behind ``benchmarks/RESULTS.md`` (``make bench``). Results
go to ``benchmarks/results/*.json``, ``benchmarks/RESULTS.md``, ``docs/results/`` and PNG plots
in ``benchmarks/plots/``.
"""
