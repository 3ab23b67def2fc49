"""Write ``benchmarks/RESULTS.md`` and PNG plots from ``benchmarks/results/*.json``.

Hand-written findings (profiles, what was cut, recommendations) live in ``benchmarks/notes.md``
and are copied in verbatim. Usage: ``python -m benchmarks.report``
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from benchmarks.accuracy import MOLPROP_FLAGS, molprop_run_config  # noqa: E402
from benchmarks.common import BENCH, DATASETS, PLOTS, WORK, load_result, machine_facts  # noqa: E402

MODEL_NAMES = {
    "molprop_esa": "molprop ESA (default preset, random start)",
    "molprop_esa_wide": "molprop ESA-wide (former default)",
    "molprop_esa_hpopt_t1": "molprop ESA, hpopt trial 1",
    "molprop_esa_small": "molprop ESA-small",
    "molprop_esa_prev": "ESA, dropout 0.1, raw weights",
    "molprop_esa_small_prev": "ESA-small, raw weights",
    "chemprop": "chemprop v2",
    "gin": "PyG GIN",
    "pna": "PyG PNA",
    "molprop_esa_qm9": "molprop ESA (3D)",
}
HIGHER_BETTER = {"r2", "mcc", "roc_auc"}
ESA_MODELS = tuple(MOLPROP_FLAGS)  # the molprop models of the grid
BASELINES = ("chemprop", "gin", "pna")


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def accuracy_section(res: dict | None) -> tuple[list[str], dict]:
    if not res:
        return ["## 1. Accuracy\n", "Not run.\n"], {}
    s = res["settings"]
    lines = [
        "## 1. Accuracy (scaffold split, test set)\n",
        f"Epoch budget {s['epochs']}, early-stopping patience {s['patience']} on validation loss "
        f"(best-validation weights restored), {s['threads']} thread per run, for every model. "
        "Mean ± std over seeds (std only with ≥ 2 seeds).\n",
        "| dataset | model | seeds | metric 1 | metric 2 | wall s / run | peak RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    wins: dict = {}
    by_key = {(r["dataset"], r["model"]): r for r in res["summary"]}
    for name in DATASETS:
        runs = [r for r in res["runs"] if r["dataset"] == name]
        if not runs:
            continue
        m1, m2 = DATASETS[name].metrics
        for model in MODEL_NAMES:
            row = by_key.get((name, model))
            if row is None:
                continue
            mr = [r for r in runs if r["model"] == model]
            wall = sum(r["wall_seconds"] for r in mr) / len(mr)
            rss = max(r["peak_rss_mb"] for r in mr)
            lines.append(
                f"| {name} | {MODEL_NAMES[model]} | {row['n_seeds']} | "
                f"{m1.upper()} {_fmt(row[m1])} ± {_fmt(row[m1 + '_std'])} | "
                f"{m2.upper()} {_fmt(row[m2])} ± {_fmt(row[m2 + '_std'])} | "
                f"{wall:.0f} | {rss:.0f} |"
            )
        for esa_model in ESA_MODELS:
            for other in BASELINES:
                better = matched_better(runs, esa_model, other, m1)
                if better is not None:
                    wins.setdefault(esa_model, {}).setdefault(name, {})[other] = better
    lines.append("")
    for esa_model, per_set in wins.items():
        for other in BASELINES:
            done = [n for n, v in per_set.items() if other in v]
            if done:
                better = [n for n in done if per_set[n][other]]
                lines.append(
                    f"- {MODEL_NAMES[esa_model]} better than {MODEL_NAMES[other]} (mean "
                    f"headline metric, RMSE / MCC, over the seeds both ran) on "
                    f"**{len(better)} of {len(done)}** datasets: {', '.join(better) or 'none'}"
                )
    lines.append("")
    configs = {json_key(run_config(r)) for r in res["runs"] if r["model"] in ESA_MODELS}
    lines.append(
        "molprop settings used (from each run's artifact config.json; `--epochs`/`--patience` "
        "overridden as above): " + " / ".join(f"`{c}`" for c in sorted(configs)) + "\n"
    )
    _accuracy_plot(res)
    lines.append("![accuracy](plots/accuracy.png)\n")
    return lines, wins


def extra_seeds_section(grid: dict | None, extra: dict | None) -> list[str]:
    """More seeds on some datasets (``accuracy --result-name accuracy_extra_seeds``), pooled with
    the grid's seeds of the same models: per-seed headline metric, mean, seed pairs won."""
    if not grid or not extra or not extra.get("runs"):
        return []
    if extra.get("settings") != grid.get("settings"):
        return ["## 1b. Extra seeds\n", "Skipped: made with other settings than the grid.\n"]
    models = sorted({r["model"] for r in extra["runs"]}, key=list(MODEL_NAMES).index)
    lines = [
        "## 1b. Extra seeds on the contested datasets (`python -m benchmarks.accuracy "
        "--result-name accuracy_extra_seeds ...`)\n",
        "Same budget, patience and split procedure as the grid; the grid's seeds and these "
        "pooled. Headline metric per seed (RMSE lower / MCC higher is better).\n",
        "| dataset | model | per seed | mean | seeds |",
        "|---|---|---|---|---|",
    ]
    pairs: list[str] = []
    for name in DATASETS:
        if not any(r["dataset"] == name for r in extra["runs"]):
            continue
        metric = DATASETS[name].metrics[0]
        pooled = {
            m: {
                r["seed"]: r["test"][metric]
                for r in grid["runs"] + extra["runs"]
                if r["dataset"] == name and r["model"] == m
            }
            for m in models
        }
        for m in models:
            vals = pooled[m]
            lines.append(
                f"| {name} | {MODEL_NAMES[m]} | "
                + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(vals.items()))
                + f" | {metric.upper()} {sum(vals.values()) / len(vals):.3f} | {len(vals)} |"
            )
        if len(models) == 2:
            a, b = models
            common = sorted(set(pooled[a]) & set(pooled[b]))
            won = sum((pooled[a][k] > pooled[b][k]) == (metric in HIGHER_BETTER) for k in common)
            pairs.append(f"{name} {won} of {len(common)}")
    if pairs:
        lines += [
            "",
            f"Seed pairs won by {MODEL_NAMES[models[0]]} over {MODEL_NAMES[models[1]]}: "
            + ", ".join(pairs)
            + ".\n",
        ]
    return lines + [""]


def matched_better(runs: list[dict], model: str, other: str, metric: str) -> bool | None:
    """Is ``model``'s mean ``metric`` better than ``other``'s over the seeds both ran? (None if
    they share no seed.) Matching matters: GIN/PNA ran fewer seeds than ESA and chemprop."""
    by_seed = {
        m: {r["seed"]: r["test"][metric] for r in runs if r["model"] == m} for m in (model, other)
    }
    seeds = sorted(set(by_seed[model]) & set(by_seed[other]))
    if not seeds:
        return None
    diff = sum(by_seed[model][s] - by_seed[other][s] for s in seeds) / len(seeds)
    return (diff > 0) if metric in HIGHER_BETTER else (diff < 0)


def run_config(run: dict) -> dict:
    """A molprop run's settings (older result files: read back from the run's artifact)."""
    if run.get("config"):
        return run["config"]
    return molprop_run_config(
        WORK / "accuracy" / f"{run['dataset']}_seed{run['seed']}_{run['model']}"
    )


def json_key(config: dict) -> str:
    m, t = config["model"], config["train"]
    return (
        f"layers={m['layers']} hidden={m['hidden_dim']} heads={m['heads']} seeds={m['num_seeds']} "
        f"mlp={m['mlp_kind']} dropout={m['dropout']} size_path={m['size_path']} "
        f"batch={t['batch_size']} lr={t['lr']} wd={t['weight_decay']} "
        f"ema_epochs={t.get('ema_epochs', 0)}"
    )


def _accuracy_plot(res: dict) -> None:
    names = [n for n in DATASETS if any(r["dataset"] == n for r in res["summary"])]
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        metric = DATASETS[name].metrics[0]
        order = list(MODEL_NAMES)
        rows = sorted(
            (r for r in res["summary"] if r["dataset"] == name),
            key=lambda r: order.index(r["model"]),
        )
        labels = [MODEL_NAMES[r["model"]] for r in rows]
        vals = [r[metric] for r in rows]
        errs = [0 if math.isnan(r[metric + "_std"]) else r[metric + "_std"] for r in rows]
        ax.bar(
            range(len(rows)), vals, yerr=errs, color=[f"C{order.index(r['model'])}" for r in rows]
        )
        ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{name} test {metric.upper()}")
    fig.tight_layout()
    fig.savefig(PLOTS / "accuracy.png", dpi=110)
    plt.close(fig)


def train_cost_section(res: dict | None) -> list[str]:
    if not res:
        return ["## 2. Training cost\n", "Not run.\n"]
    lines = [
        "## 2. Training cost ("
        + res["dataset"]
        + ", seed-0 scaffold split; ESA also on one QM9 part)\n",
        "s/epoch = (wall(E2 epochs) − wall(E1 epochs)) / (E2 − E1) of two whole processes "
        f"(early stopping off), {res['threads']} thread each: one epoch of training + "
        "validation, without start-up, featurisation and final evaluation. CPU s/epoch: the same "
        "difference of user + system seconds (less sensitive to machine load than wall time). "
        "Peak RSS of the E2 process. Measured: when the row was measured and the 1-minute load "
        "average then (rows without one: measured beside the first accuracy grid, no timestamp).\n",
        "| model | data | E1, E2 | s / epoch | CPU s / epoch | wall E1 | wall E2 | peak RSS MiB | measured (UTC), load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model, r in res["models"].items():
        data = "QM9 part 1 (3D, 7,269)" if model.endswith("_qm9") else res["dataset"]
        e1, e2 = r.get("epochs", res["epochs"])
        lines.append(
            f"| {MODEL_NAMES[model]} | {data} | {e1}, {e2} | {r['seconds_per_epoch']:.1f} | "
            f"{_fmt(r.get('cpu_seconds_per_epoch'), 1)} | {r['wall_e1']:.0f} | "
            f"{r['wall_e2']:.0f} | {r['peak_rss_mb']:.0f} | "
            f"{_measured(r)} |"
        )
    return lines + [""]


def _measured(entry: dict) -> str:
    if "measured_utc" not in entry:
        return "first grid"
    return f"{entry['measured_utc'][:16]}, {entry['load_avg_1min']:.1f}"


def throughput_section(res: dict | None) -> list[str]:
    if not res:
        return ["## 3. Prediction throughput\n", "Not run.\n"]
    n = res["n_molecules"]
    lines = [
        "## 3. Prediction throughput (CSV in → CSV out, whole process)\n",
        f"{n} HIV SMILES, {res['threads']} thread, "
        f"{len(next(iter(res['runs'].values())))} interleaved repeats, medians. Molecules per "
        "CPU-second = molecules / (user + system seconds of the whole process).\n",
        "| tool | model | molecules / s | molecules / CPU-s | median s | median CPU s | "
        "median peak RSS MiB | all runs (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tool, s in res["summary"].items():
        runs = ", ".join(f"{r['seconds']:.1f}" for r in res["runs"][tool])
        cpu = s.get("median_cpu_seconds", float("nan"))
        lines.append(
            f"| {tool} | {THROUGHPUT_MODELS.get(tool, '')} | {s['molecules_per_s']:.0f} | "
            f"{_fmt(n / cpu if cpu == cpu else None, 0)} | {s['median_seconds']:.1f} | "
            f"{_fmt(cpu, 1)} | {s['median_peak_rss_mb']:.0f} | {runs} |"
        )
    lines.append("")
    lines += [f"- `{cmd}`" for cmd in res["commands"].values()]
    return lines + [""]


THROUGHPUT_MODELS = {
    "molprop": "default ESA (the `small` architecture: hidden 64) trained on ESOL, 1 member",
    "chemprop": "default D-MPNN trained on ESOL",
    "chemprop3": "3 chemprop D-MPNNs (ESOL, grid seeds 0, 3, 4) as one ensemble",
    "molprop_small": "ESA-small (hidden 64) trained on ESOL, 1 member",
    "molprop_shipped": "shipped `solubility`: ESA-small × 3 members + domain check + intervals",
}


#: later single-graph reruns, oldest first; a later run's points replace earlier ones
MASK_RERUNS = (
    "mask_single",
    "mask_single_chunked",
    "mask_single_shared",
    "mask_single_final",
    "mask_batch_large",
)


def merged_mask_results() -> dict | None:
    """``mask_scaling`` plus the later single-graph reruns (:data:`MASK_RERUNS`), which replace
    the first run's failed / skipped single-graph points and each other's."""
    res = load_result("mask_scaling")
    for name in MASK_RERUNS:
        extra = load_result(name)
        if extra is None:
            continue
        if res is None:
            res = extra
            continue
        redone = {(p["series"], p["size"], p["method"], p["phase"]) for p in extra["points"]}
        keep = [
            p
            for p in res["points"]
            if (p["series"], p["size"], p["method"], p["phase"]) not in redone
            and not (p["series"] == "single" and p["status"] != "ok")
        ]
        res = {**res, "points": keep + [{**p, "run": name} for p in extra["points"]]}
    return res


def mask_section(res: dict | None) -> list[str]:
    if not res:
        return ["## 4. Mask scaling\n", "Not run.\n"]
    pts = res["points"]
    lines = [
        "## 4. Mask scaling\n",
        "Each point a fresh subprocess capped at set-up address space + the cap "
        "(`RLIMIT_AS`); memory = peak RSS growth (VmHWM reset after set-up and a warm-up call). "
        "Single-graph train points come from the latest rerun (`mask_single*` result files: "
        "`_chunked` = query-chunked attention, `_shared` = plus one float mask shared by the "
        "M blocks in training).\n",
        "| series | total edges | graphs | max edges/graph | method | phase | status | s | peak Δ MiB | mask MiB | cap GiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pts:
        lines.append(
            f"| {p['series']} | {p.get('total_edges', p['size'])} | {p.get('n_graphs', '')} | "
            f"{p.get('max_edges', '')} | {p['method']} | {p['phase']} | {p['status']} | "
            f"{_fmt(p.get('seconds'), 2)} | {_fmt(p.get('peak_delta_mb'), 1)} | "
            f"{_fmt(p.get('mask_mb'), 2)} | {p.get('budget_gb', res['budget_gb'])} |"
        )
    _mask_plot(pts)
    lines.append("\n![mask scaling](plots/mask_scaling.png)\n")
    return lines


def _mask_plot(pts: list[dict]) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, series in zip(axes, ("batch", "single"), strict=True):
        for method, phase, style in (
            ("molprop", "mask", "o-"),
            ("all_pairs", "mask", "s--"),
            ("molprop", "forward", "^:"),
            ("molprop", "train", "d-."),
        ):
            sel = [
                p
                for p in pts
                if p["series"] == series
                and p["method"] == method
                and p["phase"] == phase
                and p["status"] == "ok"
            ]
            if sel:
                ax.loglog(
                    [p["total_edges"] for p in sel],
                    [max(p["peak_delta_mb"], 0.1) for p in sel],
                    style,
                    label=f"{method} {phase}",
                )
        ax.set_xlabel("directed edges in batch")
        ax.set_ylabel("peak RSS growth (MiB)")
        ax.set_title("HIV molecules, random batch" if series == "batch" else "one chain graph")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOTS / "mask_scaling.png", dpi=110)
    plt.close(fig)


def service_section(res: dict | None) -> list[str]:
    if not res or res.get("status") != "ok":
        status = (res or {}).get("status", "not run")
        return ["## 5. Service load\n", f"{status}.\n"]
    lines = [
        "## 5. Service load (uvicorn on 127.0.0.1, " + res["server"] + ")\n",
        "| SMILES / request | clients | requests | errors | requests/s | molecules/s | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in res["points"]:
        lines.append(
            f"| {p['smiles_per_request']} | {p['clients']} | {p['requests']} | {p['errors']} | "
            f"{p['requests_per_s']:.1f} | {p['molecules_per_s']:.0f} | {p['p50_ms']:.0f} | "
            f"{p['p95_ms']:.0f} |"
        )
    return lines + [""]


def hotspots_section(res: dict | None) -> list[str]:
    if not res:
        return ["## 6. Profiles\n", "Not run (`python -m benchmarks.hotspots`).\n"]
    lines = [
        "## 6. Profiles: where the time goes (`python -m benchmarks.hotspots`)\n",
        f"torch.profiler, 1 thread, freshly initialised weights, measured "
        f"{res['machine']['time_utc']} UTC (1-min load {res['machine']['load_avg_1_5_15'][0]}). "
        f"Reference fp32 `addmm` (2240 × 128 × 256) in the same process: "
        f"{res['reference_addmm_gflops']} GFLOP/s at the start, "
        f"{res['reference_addmm_gflops_end']} at the end.\n",
        "| profile | ms / step or ms / molecule | matrix products GFLOP/s | real tokens / "
        "padded slots | shares of self CPU time |",
        "|---|---|---|---|---|",
    ]

    def shares(cats: dict) -> str:
        return "; ".join(f"{k} {v:.0%}" for k, v in cats.items() if v >= 0.01)

    for preset, t in res["train"].items():
        lines.append(
            f"| training step, {preset} (batch {t['batch_size']}, {t['steps']} steps, "
            f"Lipophilicity) | {t['ms_per_step_profiled']} ms / step | {t['matmul_gflops']} | "
            f"{t['real_token_share']:.1%} | {shares(t['categories'])} |"
        )
    pred = res["predict"]
    for preset, m in pred["models"].items():
        lines.append(
            f"| prediction forward, {preset} (batch 256, size-sorted) | "
            f"{m['model_ms_per_mol']} ms / molecule | {m['matmul_gflops']} | – | "
            f"{shares(m['categories'])} |"
        )
    lines += [
        "",
        f"Prediction stages on {pred['n_molecules']} HIV SMILES (mean "
        f"{pred['mean_edge_tokens']} edge tokens): RDKit parse + featurisation "
        f"{pred['featurise_ms_per_mol']} ms / molecule, applicability-domain check "
        f"{pred['domain_ms_per_mol']} ms / molecule, model forward as above.\n",
        "Top operators, training step of the default ESA: "
        + ", ".join(
            f"`{o['op']}` {o['share']:.0%}"
            for o in res["train"].get("default", {}).get("top_ops", [])[:8]
        )
        + ".\n",
    ]
    return lines


def machine_section() -> list[str]:
    facts = None
    for name in ("accuracy", "throughput", "train_cost", "mask_scaling", "service_load"):
        res = load_result(name)
        if res:
            facts = res["machine"]
            break
    facts = facts or machine_facts()
    v = facts["versions"]
    return [
        "## Machine and versions\n",
        f"- CPU: {facts['cpu']}, {facts['logical_cpus']} logical CPUs, {facts['memory_gb']} GB RAM, "
        f"{facts['os']}, Python {facts['python']}",
        "- " + ", ".join(f"{k} {val}" for k, val in v.items()),
        "- Load: the 1-min load average at the end of each benchmark is in its result file "
        "(`benchmarks/results/*.json`, key `machine`); see the notes below for the conditions of "
        "each run.\n",
    ]


def main() -> int:
    PLOTS.mkdir(parents=True, exist_ok=True)
    acc, _ = accuracy_section(load_result("accuracy"))
    notes = BENCH / "notes.md"
    lines = [
        "# molprop benchmarks\n",
        "Generated by `python -m benchmarks.report` from `benchmarks/results/*.json` "
        "(`make bench` runs the suite: `python -m benchmarks all`; `python -m benchmarks --list` lists every benchmark).\n",
    ]
    lines += machine_section()
    if notes.exists():
        lines += [notes.read_text(), ""]
    lines += acc
    lines += extra_seeds_section(load_result("accuracy"), load_result("accuracy_extra_seeds"))
    lines += train_cost_section(load_result("train_cost"))
    lines += throughput_section(load_result("throughput"))
    lines += mask_section(merged_mask_results())
    lines += service_section(load_result("service_load"))
    lines += hotspots_section(load_result("hotspots"))
    (BENCH / "RESULTS.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
