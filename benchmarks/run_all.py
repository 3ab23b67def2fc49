"""Run every benchmark in order, then write RESULTS.md (``make bench``).

Default = the cut grid that fits a shared 2-core machine in about an hour;
``--full`` = 5 datasets x 3 seeds accuracy grid. Steps: accuracy, throughput (needs the
accuracy ESOL seed-0 models), train_cost, mask_scaling, service_load, report.
"""

from __future__ import annotations

import argparse

from benchmarks import accuracy, mask_scaling, report, service_load, throughput, train_cost


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--full", action="store_true", help="full accuracy grid (hours on 2 cores)")
    p.add_argument("--mask-budget-gb", type=float, default=4.0)
    p.add_argument("--skip", nargs="*", default=[], help="steps to skip")
    args = p.parse_args(argv)
    steps = {
        "accuracy": lambda: accuracy.main(["--all"] if args.full else
                                          ["--datasets", "ESOL", "FreeSolv", "--seeds", "0"]),
        "throughput": lambda: throughput.main([]),
        "train_cost": lambda: train_cost.main([]),
        "mask_scaling": lambda: mask_scaling.main(["--budget-gb", str(args.mask_budget_gb)]),
        "service_load": lambda: service_load.main([]),
    }  # fmt: skip
    for name, step in steps.items():
        if name not in args.skip:
            step()
    return report.main()


if __name__ == "__main__":
    raise SystemExit(main())
