"""``molprop hpopt``: hyperparameter search with Optuna (TPE sampler, median pruning after
each validation epoch) over width, heads, layer pattern, PMA seeds, lr, LR schedule (and its
warm-up), batch size and dropout. Trials are scored on the validation split only; the test
split is held out and never used.

Writes to ``--out``: ``best_preset.json`` (``molprop train --preset FILE`` takes it),
``trials.csv``, ``trials.md`` and ``trials.png``; the study itself lives in ``--storage``
(default ``<out>/study.db``, SQLite). Several workers (processes, machines) share a study when
started with the same ``--storage`` and ``--study-name``: each runs its ``--trials``; give each
its own ``--seed``. ``--trials 0`` only rewrites the reports from the storage."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from molprop.cli.options import add_data_args, add_split_args, featurizer_config


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name,
        help="hyperparameter search (Optuna) on the validation split",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_args(p)
    add_split_args(p)
    g = p.add_argument_group("search")
    g.add_argument("--out", required=True, help="folder for the reports and the default study")
    g.add_argument("--trials", type=int, default=20, help="trials this worker runs (default 20)")
    g.add_argument("--timeout", type=float, default=None, help="stop starting trials after S s")
    g.add_argument("--epochs", type=int, default=30, help="most epochs per trial (default 30)")
    g.add_argument("--patience", type=int, default=10, help="early stopping per trial")
    g.add_argument(
        "--storage",
        default=None,
        help="SQLAlchemy URL (postgresql://..., sqlite:///...), a .db/.sqlite file or a "
        ".log/.journal file (default <out>/study.db)",
    )
    g.add_argument("--study-name", default="molprop", help="study shared by the workers")
    g.add_argument("--seed", type=int, default=0, help="sampler and model seed (per worker)")
    g.add_argument(
        "--space", default=None, help="JSON file narrowing the search space (see SearchSpace)"
    )
    g.add_argument(
        "--pruner-warmup-epochs", type=int, default=3, help="epochs before a trial may be pruned"
    )
    g.add_argument(
        "--pruner-startup-trials", type=int, default=4, help="trials before pruning starts"
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.cli.extras import require_extra

    require_extra("hpopt", "molprop hpopt")
    from molprop.errors import ConfigError
    from molprop.training.hpopt import SearchRequest, SearchSpace, run_search
    from molprop.training.hpopt_report import best_preset
    from molprop.training.tables import SplitSpec, TableSpec

    space = SearchSpace()
    if args.space is not None:
        try:
            space = SearchSpace.from_dict(json.loads(Path(args.space).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"--space {args.space}: {exc}") from exc
    request = SearchRequest(
        table=TableSpec(
            args.data,
            args.smiles_column,
            args.target_columns,
            featurizer_config(args),
            args.invalid,
            not args.no_progress,
        ),
        split=SplitSpec(args.split_type, tuple(args.split_sizes), args.split_column, 0),
        out=Path(args.out),
        task_type=args.task_type,
        space=space,
        epochs=args.epochs,
        patience=args.patience,
        n_trials=args.trials,
        timeout=args.timeout,
        storage=args.storage,
        study_name=args.study_name,
        seed=args.seed,
        pruner_warmup_epochs=args.pruner_warmup_epochs,
        pruner_startup_trials=args.pruner_startup_trials,
        progress=not args.no_progress,
    )
    study = run_search(request)
    try:
        print(json.dumps(best_preset(study), indent=2))
    except ConfigError as exc:
        print(f"no complete trial yet: {exc}")
    print(f"reports in {args.out}")
    return 0
