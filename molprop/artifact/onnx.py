"""ONNX exports of an artifact's members: written next to (or inside) the artifact, read back
for the ``onnxruntime`` backend.

Layout of an export (``DIR/onnx/`` by default, or any folder)::

    onnx.json           metadata: molprop version, featuriser kind + version, token kind,
                        opset, input names, and per member its file and the SHA-256 of the
                        safetensors weights it was exported from
    member_<i>.onnx     one graph per ensemble member (see molprop.models.onnx)

``--out FILE.onnx`` writes ``FILE.onnx`` (one member) or ``FILE.<i>.onnx`` (an ensemble) and
``FILE.json`` beside them. Loading checks the featuriser version and the weights' hashes, so an
export never silently serves other weights than the artifact's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from molprop.artifact.config import ArtifactConfig
from molprop.artifact.paths import artifact_file
from molprop.artifact.store import load_config, load_members, member_name, member_path
from molprop.data.batch import collate_graphs
from molprop.errors import ArtifactError
from molprop.featurize import build_featurizer
from molprop.models.model import MolPropModel
from molprop.models.onnx import OPSET, OnnxMember, export_member

log = logging.getLogger(__name__)


def _molprop_version() -> str:
    try:
        return version("molprop")
    except PackageNotFoundError:  # a source tree that is not installed
        return "unknown"


ONNX_DIR = "onnx"
METADATA_NAME = "onnx.json"
#: Molecules of the tracing batch: different sizes, a ring, a charge, an isolated ion.
EXAMPLE_SMILES = ("CCO", "c1ccccc1C(=O)N", "CC(C)Cc1ccc(cc1)[C@@H](C)C(=O)O", "[Na+].[Cl-]")


@dataclass(frozen=True)
class OnnxExport:
    """Where an export's files are: ``metadata`` (the JSON) and one ``.onnx`` per member."""

    metadata: Path
    members: tuple[Path, ...]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _layout(out: Path, n_members: int) -> OnnxExport:
    if out.suffix == ".onnx":
        files = (
            (out,)
            if n_members == 1
            else tuple(out.with_name(f"{out.stem}.{i}.onnx") for i in range(n_members))
        )
        return OnnxExport(out.with_suffix(".json"), files)
    return OnnxExport(
        out / METADATA_NAME, tuple(out / f"member_{i}.onnx" for i in range(n_members))
    )


def export_onnx(
    directory: str | Path, out: str | Path | None = None, opset: int = OPSET
) -> OnnxExport:
    """Export every member of the artifact in ``directory`` to ONNX (default ``DIR/onnx/``;
    ``out``: a folder, or a ``.onnx`` file name). Raises ``ExportError`` when a member's
    operations cannot be exported."""
    directory = Path(directory)
    config = load_config(directory)
    members = load_members(directory, config)
    export = _layout(Path(out) if out is not None else directory / ONNX_DIR, len(members))
    export.metadata.parent.mkdir(parents=True, exist_ok=True)
    featurizer = build_featurizer(config.featurizer)
    example = collate_graphs([featurizer.from_smiles(s) for s in EXAMPLE_SMILES])
    if members and members[0].n_extra:
        import torch

        example = example.with_extra(torch.zeros(example.num_graphs, members[0].n_extra))
    for i, (model, path) in enumerate(zip(members, export.members, strict=True)):
        export_member(model, example, path, opset=opset)
        log.info("exported member %d of %d to %s", i + 1, len(members), path)
    meta = {
        "format": "onnx",
        "molprop_version": _molprop_version(),
        "opset": opset,
        "artifact": config.name,
        "artifact_version": config.version,
        "featurizer": {
            "kind": config.featurizer.kind,
            "version": config.featurizer.resolved_version,
        },
        "token_kind": config.model.token_kind,
        "inputs": ["features", "valid", "structure", "n_nodes"]
        + (["extra"] if config.model.n_extra else []),
        "members": [
            {"file": path.name, "weights_sha256": _sha256(member_path(directory, i))}
            for i, path in enumerate(export.members)
        ],
    }
    export.metadata.write_text(json.dumps(meta, indent=2))
    return export


def _find_metadata(directory: Path, location: str | Path | None) -> Path:
    if location is None:  # the artifact's own export: it must lie inside the artifact
        where = artifact_file(directory, f"{ONNX_DIR}/{METADATA_NAME}")
    else:
        where = Path(location)
    if where.suffix == ".onnx":
        where = where.with_suffix(".json")
    elif where.suffix != ".json":
        where = where / METADATA_NAME
    if not where.exists():
        raise ArtifactError(
            f"no ONNX export at {where}: run `molprop export --model {directory} --format onnx`"
            + (f" --out {location}" if location is not None else "")
        )
    return where


def load_onnx_members(
    directory: str | Path,
    config: ArtifactConfig,
    members: list[MolPropModel],
    location: str | Path | None = None,
    threads: int | None = None,
) -> list[OnnxMember]:
    """ONNX Runtime sessions for the artifact's members (``members``: its torch members, for
    their configs), from the export at ``location`` (default ``DIR/onnx/``). Refuses an export
    of other weights or another featuriser version (``ArtifactError``)."""
    directory = Path(directory)
    meta_path = _find_metadata(directory, location)
    try:
        meta = json.loads(meta_path.read_text())
        entries = meta["members"]
        featurizer = meta["featurizer"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ArtifactError(f"corrupt ONNX metadata {meta_path}: {exc}") from exc
    if featurizer.get("version") != config.featurizer.resolved_version:
        raise ArtifactError(
            f"{meta_path} was exported with featuriser version {featurizer.get('version')}, "
            f"the artifact has {config.featurizer.resolved_version}: export again"
        )
    if len(entries) != len(members):
        raise ArtifactError(f"{meta_path} has {len(entries)} members, the artifact {len(members)}")
    sessions = []
    for i, (entry, model) in enumerate(zip(entries, members, strict=True)):
        if entry.get("weights_sha256") != _sha256(artifact_file(directory, member_name(i))):
            raise ArtifactError(
                f"{meta_path}: member {i} was exported from other weights than "
                f"{member_path(directory, i)}: export again"
            )
        path = artifact_file(meta_path.parent, str(entry["file"]))
        if not path.exists():
            raise ArtifactError(f"missing ONNX file {path} (listed in {meta_path})")
        sessions.append(OnnxMember(path, model, threads=threads))
    return sessions
