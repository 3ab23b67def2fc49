"""The suite behind RESULTS.md, then its report (``python -m benchmarks all``, ``make bench``).

Default = the full accuracy grid (5 datasets x 3 seeds x 4 models, 30 epochs, patience 10,
``--jobs`` runs at once: about 2.5 hours on 2 idle cores); ``--quick`` = ESOL and FreeSolv,
seed 0. Steps: accuracy, throughput (needs the accuracy ESOL seed-0 models), train_cost,
mask_scaling, service_load, hotspots (profiles), report.
"""

from __future__ import annotations

import argparse
import os

from benchmarks import (
    accuracy,
    hotspots,
    mask_scaling,
    report,
    service_load,
    throughput,
    train_cost,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="accuracy on ESOL + FreeSolv, seed 0 only")
    p.add_argument(
        "--jobs",
        type=int,
        default=max(1, (os.cpu_count() or 1)),
        help="accuracy runs at once (1 thread each)",
    )
    p.add_argument("--mask-budget-gb", type=float, default=4.0)
    p.add_argument("--skip", nargs="*", default=[], help="steps to skip")
    args = p.parse_args(argv)
    steps = {
        "accuracy": lambda: accuracy.main(
            ["--jobs", str(args.jobs)]
            + (["--datasets", "ESOL", "FreeSolv", "--seeds", "0"] if args.quick else ["--all"])
        ),
        "throughput": lambda: throughput.main([]),
        "train_cost": lambda: train_cost.main([]),
        "mask_scaling": lambda: mask_scaling.main(["--budget-gb", str(args.mask_budget_gb)]),
        "service_load": lambda: service_load.main([]),
        "hotspots": lambda: hotspots.main([]),
    }
    for name, step in steps.items():
        if name not in args.skip:
            step()
    return report.main()


if __name__ == "__main__":
    raise SystemExit(main())
