"""Every benchmark by name, with the pages whose numbers it produces.

``python -m benchmarks --list`` prints them; ``python -m benchmarks NAME [ARGS ...]`` runs one
(``NAME --help`` for its options); ``python -m benchmarks all`` runs the suite behind
``benchmarks/RESULTS.md`` (``make bench``). A benchmark stays while a page cites it:
tests/unit/test_benchmark_targets.py checks that each page below names its benchmark, and that
every module of this folder is a target or one of :data:`HELPERS`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

RESULTS_MD = "benchmarks/RESULTS.md"  # cited by docs/results.md; `report` writes it


@dataclass(frozen=True)
class Target:
    """``python -m benchmarks NAME``: the module ``benchmarks.<module>`` (default: the name) run
    as a script, or the shell script ``script`` (a path inside benchmarks/)."""

    name: str
    group: str
    backs: tuple[str, ...]  # the pages (paths in the repository) whose numbers it produces
    module: str | None = None
    script: str | None = None

    @property
    def source(self) -> Path:
        return BENCH / (self.script or f"{self.module or self.name}.py")

    @property
    def summary(self) -> str:
        """The first sentence of the module's docstring (for a script: of its first comment)."""
        text = self.source.read_text(encoding="utf-8")
        if self.script:
            lines = [line for line in text.splitlines()[1:] if line.startswith("#")]
            first = " ".join(line.lstrip("# ").strip() for line in lines[:1])
        else:
            doc = (ast.get_docstring(ast.parse(text)) or "").strip()
            first = " ".join(doc.split("\n\n")[0].split())
        first = first.split(". ")[0].rstrip(".:")
        return first if len(first) <= 100 else first[:100].rsplit(" ", 1)[0] + " …"


_SUITE = "the suite (`all`)"
_GRID = "accuracy grid and defaults"
_SHIPPED = "shipped models"
_TUNE = "fine-tuning and the foundation model"
_TRANSFER = "transfer learning"
_3D = "3D"
_SERVE = "service, scale and threads"

TARGETS: tuple[Target, ...] = (
    Target("all", _SUITE, (RESULTS_MD,), module="run_all"),
    Target("accuracy", _SUITE, (RESULTS_MD, "docs/results/grid_default.md")),
    Target("throughput", _SUITE, (RESULTS_MD,)),
    Target(
        "train_cost",
        _SUITE,
        (RESULTS_MD, "docs/results/default_search.md", "docs/results/grid_default.md"),
    ),
    Target("mask_scaling", _SUITE, (RESULTS_MD,)),
    Target("service_load", _SUITE, (RESULTS_MD,)),
    Target("hotspots", _SUITE, (RESULTS_MD,)),
    Target("report", _SUITE, (RESULTS_MD,)),
    Target("pyg_baselines", _SUITE, (RESULTS_MD,)),
    Target("splits", _GRID, ("docs/results/grid_default.md",)),
    Target("grid_default", _GRID, ("docs/results/grid_default.md",)),
    Target("default_candidates", _GRID, ("docs/results/default_search.md",)),
    Target("core_defaults", _GRID, ("docs/results/core.md",)),
    Target("core_chemprop", _GRID, ("docs/results/core.md",)),
    Target("core_sweep", _GRID, ("docs/results/core.md",)),
    Target("token_schemes", _GRID, ("docs/results/token_schemes.md",)),
    Target("pretrained_table", _SHIPPED, ("docs/results/pretrained.md",)),
    Target("calibration", _SHIPPED, ("docs/results/calibration.md",)),
    Target("chemistry_checks", _SHIPPED, ("docs/results/chemistry_checks.md",)),
    Target("admet_panel", _SHIPPED, ("docs/results/admet.md",)),
    Target(
        "admet_splits",
        _SHIPPED,
        ("docs/results/admet_splits.md", "docs/results/admet.md"),
    ),
    Target("admet_throughput", _SHIPPED, ("docs/results/admet.md",)),
    Target("tdc_leaderboard", _SHIPPED, ("docs/results/admet.md",)),
    Target("finetune_assay", _TUNE, ("docs/results/finetune_assay.md",)),
    Target("finetune_shift", _TUNE, ("docs/results/finetune_shift.md",)),
    Target("foundation_assay", _TUNE, ("docs/results/foundation_assay.md",)),
    Target("foundation_costs", _TUNE, ("docs/results/foundation.md",)),
    Target("finetune_cost", _TUNE, ("docs/results/foundation.md",)),
    Target("finetune_defaults", _TUNE, ("docs/results/foundation.md",)),
    Target("moleculeace", _TUNE, ("docs/results/moleculeace.md",)),
    Target("transfer_crossfit", _TRANSFER, ("docs/results/transfer.md",)),
    Target("transfer_residual", _TRANSFER, ("docs/results/transfer.md",)),
    Target("prepare_3d", _3D, ("docs/results/3d.md",)),
    Target("qm9_3d_vs_2d", _3D, ("docs/results/3d.md",)),
    Target("qm9_3d_vs_2d_runs", _3D, ("docs/results/3d.md",), script="qm9_3d_vs_2d.sh"),
    Target("oc20_element_baseline", _3D, ("docs/results/3d.md",)),
    Target("service_pretrained", _SERVE, ("docs/results/service.md",)),
    Target("service_budget", _SERVE, ("docs/results/service.md", "docs/api.md")),
    Target("service_jobs", _SERVE, ("docs/results/service.md", "docs/jobs.md")),
    Target("scale_predict", _SERVE, ("docs/results/scale.md",)),
    Target("threads", _SERVE, ("docs/deployment.md",)),
    Target("inference_variants", _SERVE, ("docs/results/inference_variants.md",)),
)
BY_NAME: dict[str, Target] = {t.name: t for t in TARGETS}

#: modules of benchmarks/ that are no benchmark themselves (imported by the targets or tests)
HELPERS = ("__init__", "__main__", "targets", "common", "mask_reference")
