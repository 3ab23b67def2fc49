"""``molprop export``: every ensemble member of an artifact as an ONNX graph (torch.onnx, dynamic
batch and token axes). Featurisation, token sets and masks stay in Python: the graphs take the
padded token tensors and masks (see ``molprop.models.onnx``) and are run by
``Predictor.from_pretrained(DIR, backend="onnxruntime")`` or ``molprop predict --backend
onnxruntime``.

``--out``: a folder (default ``<model>/onnx/``: ``onnx.json`` + ``member_<i>.onnx``) or a file
name ``FILE.onnx`` (members ``FILE.onnx`` / ``FILE.<i>.onnx`` and ``FILE.json`` beside them).
``onnx.json`` records the molprop, featuriser and opset versions and the SHA-256 of the weights
each graph came from; loading refuses an export of other weights."""

from __future__ import annotations

import argparse


def add_parser(sub, name: str) -> None:
    p = sub.add_parser(
        name,
        help="export a model's members to ONNX",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="artifact directory or shipped model name")
    p.add_argument("--format", choices=["onnx"], default="onnx", help="export format (onnx)")
    p.add_argument("--out", default=None, help="folder or FILE.onnx (default: <model>/onnx/)")
    p.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from molprop.cli.extras import require_extra

    require_extra("onnx", "molprop export", ("onnx",))
    from molprop.artifact import Artifact

    export = Artifact.open(args.model).export_onnx(args.out, opset=args.opset)
    for path in export.members:
        print(f"wrote {path}")
    print(f"wrote {export.metadata}")
    return 0
