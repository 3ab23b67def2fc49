"""``molprop foundation``: the foundation model's corpus, pretraining and export.

    molprop foundation data --out DIR --moses-wheel WHEEL --shared-data DIR --labels N
    molprop foundation featurize --data DIR
    molprop foundation pretrain --data DIR --run DIR [--molecules N --epochs E --hidden H]
    molprop foundation export --run DIR --out DIR

``data`` builds the corpus (standardised, deduplicated by InChIKey; ``molprop.corpus.build``)
and the RDKit-descriptor labels of its first N molecules (``molprop.corpus.labels``);
``pretrain`` featurises those molecules once into shards and trains an ESA encoder to regress
the scaled descriptors, resumable from ``RUN/checkpoints/last.ckpt`` and data parallel through
Lightning (``--devices``, ``--num-nodes``); ``export`` writes the trained model as a molprop
artifact that ``molprop finetune --from`` / ``molprop train --init`` start from.
"""

from __future__ import annotations

import argparse


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name,
        help="foundation model: corpus, pretraining, export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = p.add_subparsers(dest="verb", required=True)

    d = verbs.add_parser("data", help="build the corpus and its descriptor labels")
    d.add_argument("--out", required=True, help="corpus directory to write")
    d.add_argument("--moses-wheel", default=None, help="the molsets wheel (MOSES sets inside)")
    d.add_argument("--shared-data", default=None, help="folder whose CSV SMILES are added")
    d.add_argument("--labels", type=int, default=300_000, help="molecules to label (0: none)")
    d.add_argument("--workers", type=int, default=2, help="processes")
    d.add_argument("--seed", type=int, default=0, help="seed of the corpus order")
    d.add_argument("--skip-corpus", action="store_true", help="reuse the corpus in --out")
    d.add_argument("--no-progress", action="store_true")
    d.set_defaults(func=run_data)

    f = verbs.add_parser(
        "featurize", help="featurise the labelled molecules into graph shards (before DDP runs)"
    )
    f.add_argument("--data", required=True, help="corpus directory (molprop foundation data)")
    f.add_argument("--workers", type=int, default=2, help="processes")
    f.set_defaults(func=run_featurize)

    t = verbs.add_parser("pretrain", help="pretrain (or resume) on the labelled corpus")
    t.add_argument("--data", required=True, help="corpus directory (molprop foundation data)")
    t.add_argument("--run", required=True, help="run directory (checkpoints, metrics.csv)")
    t.add_argument("--molecules", type=int, default=None, help="labelled molecules used")
    t.add_argument("--val", type=int, default=5000, help="molecules held out for validation")
    t.add_argument("--epochs", type=int, default=10)
    t.add_argument("--hidden", type=int, default=64)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--layers", default="MSMSP S")
    t.add_argument("--num-seeds", type=int, default=8)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--warmup-steps", type=int, default=500)
    t.add_argument("--val-every", type=int, default=1000, help="validate every N batches")
    t.add_argument("--checkpoint-minutes", type=float, default=8.0)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--workers", type=int, default=1, help="featurisation processes")
    t.add_argument("--accelerator", default="auto")
    t.add_argument("--devices", default="1", help="devices per node (Lightning)")
    t.add_argument("--num-nodes", type=int, default=1)
    t.add_argument("--strategy", default="auto", help="Lightning strategy, e.g. ddp")
    t.add_argument("--threads", type=int, default=None, help="torch threads")
    t.add_argument("--max-steps", type=int, default=-1, help="stop after N steps (tests)")
    t.set_defaults(func=run_pretrain)

    e = verbs.add_parser("export", help="write a pretraining run as a molprop artifact")
    e.add_argument("--run", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--checkpoint", default=None, help="default: RUN/checkpoints/last.ckpt")
    e.add_argument("--name", default="foundation")
    e.set_defaults(func=run_export)


def run_data(args: argparse.Namespace) -> int:
    from molprop.corpus.build import build_corpus, default_sources
    from molprop.corpus.labels import compute_labels

    if not args.skip_corpus:
        sources = default_sources(args.moses_wheel, args.shared_data)
        manifest = build_corpus(
            sources, args.out, workers=args.workers, seed=args.seed, progress=not args.no_progress
        )
        print(f"corpus: {manifest['molecules']} molecules, totals {manifest['totals']}")
    if args.labels:
        meta = compute_labels(
            args.out, args.labels, workers=args.workers, progress=not args.no_progress
        )
        print(
            f"labels: {meta['n_molecules']} molecules x {len(meta['names'])} descriptors "
            f"({len(meta['dropped'])} dropped), {meta['n_failed']} failed"
        )
    return 0


def run_featurize(args: argparse.Namespace) -> int:
    from molprop.training.foundation import featurize_shards

    paths = featurize_shards(args.data, workers=args.workers)
    print(f"{len(paths)} graph shards in {paths[0].parent if paths else args.data}")
    return 0


def _devices(text: str):
    return text if text == "auto" else int(text)


def run_pretrain(args: argparse.Namespace) -> int:
    from molprop.training.foundation import PretrainConfig, pretrain

    config = PretrainConfig(
        molecules=args.molecules,
        val=args.val,
        epochs=args.epochs,
        hidden=args.hidden,
        heads=args.heads,
        layers=args.layers,
        num_seeds=args.num_seeds,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        val_every=args.val_every,
        checkpoint_minutes=args.checkpoint_minutes,
        seed=args.seed,
    )
    pretrain(
        args.data,
        args.run,
        config,
        workers=args.workers,
        accelerator=args.accelerator,
        devices=_devices(args.devices),
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        threads=args.threads,
        max_steps=args.max_steps,
    )
    return 0


def run_export(args: argparse.Namespace) -> int:
    from molprop.training.foundation import export_foundation

    out = export_foundation(args.run, args.out, checkpoint=args.checkpoint, name=args.name)
    print(f"artifact: {out}")
    return 0
