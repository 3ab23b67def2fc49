"""``python -m benchmarks``: every benchmark from one entry point.

python -m benchmarks --list              # the benchmarks, by group, with the pages they back
python -m benchmarks NAME [ARGS ...]     # run one (NAME --help: its options)
python -m benchmarks all [--quick]       # the suite behind benchmarks/RESULTS.md (make bench)
"""

from __future__ import annotations

import runpy
import subprocess
import sys

from benchmarks.targets import BENCH, BY_NAME, TARGETS, Target


def listing() -> str:
    lines, group = [], None
    for target in TARGETS:
        if target.group != group:
            group = target.group
            lines += ["", f"{group}:"]
        lines.append(f"  {target.name:<22} {target.summary}")
        lines.append(f"  {'':<22}   -> {', '.join(target.backs)}")
    return "\n".join(lines).lstrip("\n")


def run(target: Target, args: list[str]) -> int:
    """Run ``target`` with ``args`` as its command line; its exit code."""
    if target.script:
        return subprocess.call(["bash", str(BENCH / target.script), *args])
    module = f"benchmarks.{target.module or target.name}"
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if argv[0] == "--list":
        print(listing())
        return 0
    target = BY_NAME.get(argv[0])
    if target is None:
        print(
            f"python -m benchmarks: no benchmark {argv[0]!r} (--list shows them)", file=sys.stderr
        )
        return 2
    return run(target, argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
