"""``molprop finetune``: fine-tune a pretrained or shipped model on high-fidelity labels or an
in-house assay (new column names -> fresh head; default strategy ``full``; at most 30 epochs,
the lr warming up over 2 of them, then decaying; without --val the data are split (scaffold
0.8/0.1/0.1) and the weights of the best validation epoch are kept)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from molprop.cli.options import add_data_args, add_split_args, add_train_args, train_config
from molprop.models.config import FINETUNE_DEFAULTS
from molprop.transfer import MODES, STRATEGIES

#: ``molprop finetune``'s own training defaults (the others are ``molprop train``'s): the one
#: home of a fine-tune's defaults, :data:`molprop.models.config.FINETUNE_DEFAULTS`
DEFAULTS = FINETUNE_DEFAULTS


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name, help="fine-tune a pretrained model", description=__doc__, conflict_handler="resolve"
    )
    p.add_argument(
        "--from",
        dest="pretrained",
        default=None,
        help="pretrained artifact directory or model name (default: the model named "
        "'foundation' in $MOLPROP_MODEL_DIR or the shipped models; an error if there is none)",
    )
    add_data_args(p)
    add_split_args(p)
    add_train_args(p, own=DEFAULTS)
    # after add_train_args: this --strategy (transfer strategy) replaces Lightning's, if any
    p.add_argument(
        "--strategy",
        dest="transfer_strategy",
        default="full",
        choices=STRATEGIES,
        help="fine-tuning strategy (default: full); delta: learn the residual of a linear "
        "fit of the low label; delta-measured (--mode inductive): delta whose training "
        "targets use the training molecules' measured low labels (prediction needs none)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="transductive",
        help="label-augment / delta: measured low labels (transductive; the model then "
        "needs them to predict) or the pretrained model's predictions (inductive)",
    )
    p.add_argument(
        "--cross-fit",
        type=int,
        default=0,
        metavar="K",
        help="inductive label-augment / delta(-measured): the training inputs are out-of-fold "
        "predictions of K models pretrained without each fold (needs --pretrain-data)",
    )
    p.add_argument(
        "--pretrain-data",
        default=None,
        help="the low-fidelity table the pretrained model was trained on (--cross-fit)",
    )
    p.add_argument(
        "--pretrain-holdout",
        type=float,
        default=0.1,
        help="early-stopping fraction of the fold models' pretraining (--cross-fit)",
    )
    p.add_argument(
        "--keep-head",
        action="store_true",
        help="reuse the pretrained head (same number of targets; no augmentation)",
    )
    p.add_argument(
        "--unfreeze-after",
        type=int,
        default=0,
        metavar="N",
        help="train N epochs with the encoder frozen, then unfreeze it",
    )
    p.add_argument(
        "--low-columns",
        nargs="+",
        default=None,
        help="measured low-fidelity columns (default: the pretrained targets)",
    )
    p.add_argument("--val", default=None, help="validation CSV (else --data is split)")
    p.add_argument("--test", default=None, help="test CSV (with --val)")
    p.add_argument("--name", default="", help="model name stored in the artifact")
    p.add_argument("--out", required=True, help="artifact directory to write")
    p.set_defaults(func=run, strategy="auto")


def run(args: argparse.Namespace) -> int:
    from molprop.errors import ConfigError
    from molprop.transfer.finetune import FinetuneRequest, run_finetune

    if args.featurizer not in (None, "2d") or args.featurizer_params not in (None, "{}"):
        raise ConfigError("finetune uses the pretrained model's featurizer; drop --featurizer")
    cfg = train_config(args)
    if "strategy" in cfg.__dataclass_fields__:
        cfg = replace(cfg, strategy="auto")
    crossfit = None
    if args.cross_fit:
        from pathlib import Path

        from molprop.transfer.crossfit import CrossFit

        if args.pretrain_data is None:
            raise ConfigError("--cross-fit needs --pretrain-data (the pretraining table)")
        crossfit = CrossFit(
            args.pretrain_data,
            Path(args.out) / "crossfit",
            args.cross_fit,
            args.pretrain_holdout,
            args.smiles_column,
        )
    request = FinetuneRequest(
        pretrained=args.pretrained,
        data=args.data,
        target_columns=args.target_columns,
        out=args.out,
        smiles_column=args.smiles_column,
        val_data=args.val,
        test_data=args.test,
        strategy=args.transfer_strategy,
        mode=args.mode,
        low_columns=args.low_columns,
        task_type=args.task_type,
        split_type=args.split_type,
        split_sizes=tuple(args.split_sizes),
        split_column=args.split_column,
        train=cfg,
        units=args.units,
        invalid=args.invalid,
        name=args.name,
        progress=not args.no_progress,
        crossfit=crossfit,
        keep_head=args.keep_head,
        unfreeze_after=args.unfreeze_after,
    )
    result = run_finetune(request)
    if result.written:  # data parallel: the ranks > 0 wrote nothing and stay quiet
        parts = [p for p in ("train", "val", "test") if p in result.metrics]
        print(json.dumps({p: result.ensemble(p) for p in parts}, indent=2))
        print(f"fine-tuned artifact written to {args.out}")
        print(verdict_line(result.metrics))
    return 0


def verdict_line(metrics: dict) -> str:
    """The baselines' verdict as one line: ``WARNING: ...`` when the fine-tuned model does not
    beat one of them on validation, or the mean predictor on test (or was not checked)."""
    from molprop.transfer.baselines import losing

    found = metrics.get("verdict") or {}
    message = found.get("message", "no baselines computed")
    if losing(found) or found.get("beats_mean") is None or found.get("beats_mean_on_test") is False:
        return f"WARNING: {message}"
    return f"baselines: {message}"
