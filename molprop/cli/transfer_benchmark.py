"""``molprop transfer-benchmark``: high-fidelity only, every strategy in both modes and a linear
correction of the low label, over seeds; writes results.csv, results.md and results.png."""

from __future__ import annotations

import argparse
from dataclasses import replace

from molprop.cli.options import add_model_args, model_overrides


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(name, help="benchmark low -> high fidelity transfer", description=__doc__)
    p.add_argument("--data", required=True, help="CSV with SMILES, low and high label columns")
    p.add_argument("--smiles-column", default="smiles")
    p.add_argument("--low-column", required=True)
    p.add_argument("--high-column", required=True)
    p.add_argument(
        "--high-sizes",
        nargs=3,
        type=float,
        required=True,
        metavar=("TRAIN", "VAL", "TEST"),
        help="high-fidelity molecule counts",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument(
        "--strategies",
        nargs="+",
        default=None,
        help="default: all six (delta-measured: inductive mode only)",
    )
    p.add_argument("--modes", nargs="+", default=["transductive", "inductive"])
    p.add_argument("--units", default="", help="unit of the labels (for the table)")
    add_model_args(p)
    g = p.add_argument_group("budgets")
    g.add_argument("--pretrain-epochs", type=int, default=40)
    g.add_argument("--pretrain-lr", type=float, default=5e-4)
    g.add_argument("--pretrain-holdout", type=float, default=0.1)
    g.add_argument("--finetune-epochs", type=int, default=40)
    g.add_argument("--finetune-lr", type=float, default=5e-4)
    g.add_argument("--batch-size", type=int, default=64)
    g.add_argument("--patience", type=int, default=10)
    g.add_argument(
        "--ema-epochs",
        type=float,
        default=None,
        help="weight averaging of pretraining and fine-tuning (default: molprop "
        "train's; 0: off, as in the results measured before it existed)",
    )
    g.add_argument(
        "--cross-fit",
        type=int,
        default=3,
        metavar="K",
        help="inductive label-augment / delta: out-of-fold training inputs from K fold "
        "models per seed (default 3; 0: the full model's in-sample predictions)",
    )
    g.add_argument(
        "--keep-head",
        action="store_true",
        help="full / freeze-encoder: reuse the pretrained head (one target each side)",
    )
    g.add_argument(
        "--unfreeze-after",
        type=int,
        default=0,
        metavar="N",
        help="every strategy but freeze-encoder: encoder frozen for the first N epochs",
    )
    g.add_argument(
        "--reuse-pretrained",
        action="store_true",
        help="reuse the pretrained models of an earlier run into the same --out when their "
        "recipe, molecules and seed match (e.g. to rerun other strategies or fine-tune "
        "budgets); otherwise they are retrained",
    )
    p.add_argument("--out", required=True)
    p.set_defaults(func=run)


def train_configs(args: argparse.Namespace):
    """(pretraining, fine-tuning) TrainConfigs from the budget flags."""
    from molprop.models.config import TrainConfig

    base = TrainConfig(batch_size=args.batch_size, patience=args.patience)
    if args.ema_epochs is not None:
        base = replace(base, ema_epochs=args.ema_epochs)
    return (
        replace(base, epochs=args.pretrain_epochs, lr=args.pretrain_lr),
        replace(base, epochs=args.finetune_epochs, lr=args.finetune_lr),
    )


def run(args: argparse.Namespace) -> int:
    from molprop.transfer import STRATEGIES
    from molprop.transfer.benchmark import BenchmarkRequest, run_benchmark

    pretrain, finetune = train_configs(args)
    request = BenchmarkRequest(
        data=args.data,
        low_column=args.low_column,
        high_column=args.high_column,
        high_sizes=tuple(args.high_sizes),
        out=args.out,
        smiles_column=args.smiles_column,
        seeds=args.seeds,
        strategies=args.strategies or STRATEGIES,
        modes=args.modes,
        model=model_overrides(args),
        pretrain=pretrain,
        finetune=finetune,
        pretrain_holdout=args.pretrain_holdout,
        units=args.units,
        crossfit_folds=args.cross_fit,
        keep_head=args.keep_head,
        unfreeze_after=args.unfreeze_after,
        reuse_pretrained=args.reuse_pretrained,
    )
    table = run_benchmark(request)
    print(table.to_string(index=False))
    print(f"results written to {args.out}/results.md and results.png")
    return 0
