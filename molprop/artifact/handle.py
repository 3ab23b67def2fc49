"""One handle on a model directory: :class:`Artifact`.

A model is a directory (its layout: :mod:`molprop.artifact.paths`). Code outside
``molprop/artifact/`` opens a model and reads or writes any of its files through this class —
config, members' weights, metrics, split, calibration, domain, reference, card, an augmented
model's pretrained copy, the ONNX export — and packs or unpacks the whole directory as bytes
(the job database stores published models so); ``tests/unit/test_architecture_artifact.py``
checks that nothing else names a model file. The format is the one the modules of this package
read and write: JSON and safetensors, every file named through
:func:`~molprop.artifact.paths.artifact_file` (no link out of the directory is followed),
nothing ever unpickled.
"""

from __future__ import annotations

import shutil
import stat
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from molprop.artifact import card, split, store
from molprop.artifact.calibration import Calibration
from molprop.artifact.card import CardTexts
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.domain import ApplicabilityDomain, add_domain_to_artifact
from molprop.artifact.onnx import OnnxExport, export_onnx, load_onnx_members
from molprop.artifact.paths import (
    CALIBRATION_NAME,
    CARD_NAME,
    CONFIG_NAME,
    DOMAIN_NAME,
    LOGS_DIR,
    METRICS_NAME,
    artifact_file,
    member_name,
)
from molprop.artifact.reference import Reference
from molprop.artifact.resolve import ModelSource, resolve_base_model, resolve_model
from molprop.errors import ArtifactError
from molprop.models.model import MolPropModel
from molprop.models.onnx import OPSET, OnnxMember

#: what an augmented model's pretrained copy leaves out of its source: training curves, tables
#: and metrics (prediction reads none of them)
PRETRAINED_COPY_IGNORE = (LOGS_DIR, "*.csv", METRICS_NAME)


@dataclass(frozen=True)
class Artifact:
    """A model directory (which need not exist yet: a model about to be written).

    Open an existing model by name or path with :meth:`open` (``Artifact.open("solubility")``,
    ``Artifact.open("./runs/esol")``); wrap a directory to write with ``Artifact(path)``."""

    directory: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory))

    # ------------------------------------------------------------------ finding one

    @classmethod
    def open(
        cls,
        name_or_path: str | Path,
        dirs: Sequence[str | Path] = (),
        published: ModelSource | None = None,
    ) -> Artifact:
        """The model ``name_or_path`` (a name, looked up as
        :func:`~molprop.artifact.resolve.resolve_model` says, or a directory); ``ArtifactError``
        when there is none."""
        return cls(resolve_model(name_or_path, dirs, published))

    @classmethod
    def open_base(cls, name_or_path: str | Path | None) -> Artifact:
        """The model fine-tuning starts from: ``name_or_path``, or the foundation model when
        None (:func:`~molprop.artifact.resolve.resolve_base_model`)."""
        return cls(resolve_base_model(name_or_path))

    @property
    def name(self) -> str:
        """The directory's name (a served model's name)."""
        return self.directory.name

    def path(self, name: str | Path) -> Path:
        """The path of the file ``name`` inside the model (``ArtifactError`` when it leads
        outside the directory)."""
        return artifact_file(self.directory, name)

    def exists(self) -> bool:
        """True when the directory holds a model (its ``config.json``)."""
        return (self.directory / CONFIG_NAME).is_file()

    # ------------------------------------------------------------------ config and weights

    def read_config(self) -> ArtifactConfig:
        """``config.json``, validated (see :func:`~molprop.artifact.store.load_config`)."""
        return store.load_config(self.directory)

    def write_config(self, config: ArtifactConfig) -> None:
        store.write_config(self.directory, config)

    def save(self, config: ArtifactConfig, members: Sequence[MolPropModel]) -> Artifact:
        """Write ``config.json`` and every member's weights (the directory is created)."""
        store.save_artifact(self.directory, config, members)
        return self

    def load_members(self, config: ArtifactConfig | None = None) -> list[MolPropModel]:
        """The ensemble members, checked against the config before they are built."""
        return store.load_members(self.directory, config)

    def load_onnx_members(
        self,
        config: ArtifactConfig,
        members: list[MolPropModel],
        location: str | Path | None = None,
    ) -> list[OnnxMember]:
        """The members as ONNX Runtime sessions, from the export at ``location`` (default
        ``DIR/onnx/``; see :func:`~molprop.artifact.onnx.load_onnx_members`, which refuses an
        export of other weights)."""
        return load_onnx_members(self.directory, config, members, location=location)

    def export_onnx(self, out: str | Path | None = None, opset: int = OPSET) -> OnnxExport:
        """Export every member to ONNX (default ``DIR/onnx/``; ``out``: a folder or a ``.onnx``
        file name; see :func:`~molprop.artifact.onnx.export_onnx`)."""
        return export_onnx(self.directory, out, opset=opset)

    def member_path(self, i: int) -> Path:
        """Member ``i``'s weight file (to name it in messages; read it with
        :meth:`read_member_weights`)."""
        return self.path(member_name(i))

    def read_member_weights(self, i: int) -> dict[str, torch.Tensor]:
        """Member ``i``'s stored tensors (name -> tensor), for a new model to start from."""
        return store.load_member_weights(self.directory, i)

    def set_version(self, version: str) -> None:
        """Rewrite ``config.json`` with ``version`` (nothing else changes)."""
        store.set_version(self.directory, version)

    def set_provenance(self, **changes: Any) -> ArtifactConfig:
        """Set these :class:`~molprop.artifact.config.Provenance` fields in ``config.json``
        (e.g. ``data``: the training table as the repository names it); the rest of the file
        is kept byte for byte. Returns the new config."""
        return store.update_provenance(self.directory, **changes)

    def rename_targets(self, names: Sequence[str]) -> ArtifactConfig:
        """Give the targets new names (config, calibration and metrics; weights unchanged)."""
        return store.rename_targets(self.directory, names)

    # ------------------------------------------------------------------ metrics and split

    def read_metrics(self) -> dict[str, Any]:
        """``metrics.json``; ``{}`` when there is none."""
        return store.read_metrics(self.directory)

    def write_metrics(self, metrics: dict[str, Any]) -> None:
        store.write_metrics(self.directory, metrics)

    def update_metrics(self, **entries: Any) -> dict[str, Any]:
        """Set these top-level entries of ``metrics.json`` (the others kept) -> the whole."""
        metrics = self.read_metrics()
        metrics.update(entries)
        self.write_metrics(metrics)
        return metrics

    def read_split(self) -> pd.DataFrame | None:
        """``split.csv`` (``row``, ``smiles``, ``split``); None when there is none."""
        return split.read_split(self.directory)

    def write_split(self, frame: pd.DataFrame) -> None:
        split.write_split(self.directory, frame)

    def write_invalid_rows(self, frame: pd.DataFrame) -> None:
        """The training table's unreadable rows (``invalid_rows.csv``)."""
        split.write_invalid_rows(self.directory, frame)

    def remove_invalid_rows(self) -> None:
        split.remove_invalid_rows(self.directory)

    def remove_logs(self) -> None:
        """Remove the training curves (never shipped, never read back)."""
        shutil.rmtree(self.directory / LOGS_DIR, ignore_errors=True)

    # ------------------------------------------------------------------ what prediction adds

    def read_calibration(self) -> Calibration | None:
        """``calibration.json``; None when the model is not calibrated."""
        return Calibration.load(self.directory)

    def write_calibration(self, calibration: Calibration) -> None:
        calibration.save(self.directory)

    def remove_calibration(self) -> None:
        """Remove ``calibration.json`` (a model about to be recalibrated keeps no stale one)."""
        self.path(CALIBRATION_NAME).unlink(missing_ok=True)

    def archive_calibration(self, version: str) -> Path | None:
        """Keep the current ``calibration.json`` as ``calibration.v<version>.json`` -> its
        path (None when there is none)."""
        current = self.path(CALIBRATION_NAME)
        if not current.exists():
            return None
        return current.replace(self.path(f"calibration.v{version}.json"))

    def read_domain(self) -> ApplicabilityDomain | None:
        """``domain.safetensors``; None when the model has no applicability domain."""
        return ApplicabilityDomain.load(self.directory)

    def has_domain(self) -> bool:
        return self.path(DOMAIN_NAME).exists()

    def add_domain(self, train_smiles: Sequence[str] | None = None) -> None:
        """Fit and write the applicability domain over ``train_smiles`` (default: the
        ``train`` rows of ``split.csv``)."""
        add_domain_to_artifact(self.directory, train_smiles)

    def read_reference(self) -> Reference | None:
        """``reference.json`` (percentiles among a reference set); None when there is none."""
        return Reference.load(self.directory)

    def write_reference(self, reference: Reference) -> None:
        reference.save(self.directory)

    # ------------------------------------------------------------------ the card

    def read_card(self) -> str:
        """``card.md``; ``""`` when there is none."""
        path = self.path(CARD_NAME)
        return path.read_text() if path.exists() else ""

    def _write_card_text(self, text: str) -> Path:
        path = self.directory / CARD_NAME
        path.write_text(text)
        return path

    def write_card(self, texts: CardTexts) -> Path:
        """Write ``card.md`` from the model's files and what the caller says, ``texts``
        (:func:`molprop.artifact.card.model_card`)."""
        split_frame = self.read_split()
        test_smiles = None
        if split_frame is not None:
            test_smiles = split_frame.loc[split_frame["split"] == "test", "smiles"].tolist()
        text = card.model_card(
            self.read_config(),
            self.read_metrics(),
            self.read_calibration(),
            self.read_domain(),
            test_smiles,
            self.read_reference(),
            texts,
        )
        return self._write_card_text(text)

    def write_foundation_card(
        self, *, corpus: Mapping[str, Any], labels: Mapping[str, Any], summary: Mapping[str, Any]
    ) -> Path:
        """Write ``card.md`` of a foundation model (:func:`molprop.artifact.card.foundation_card`)."""
        size = sum(p.stat().st_size for p in self.directory.rglob("*.safetensors"))
        text = card.foundation_card(
            self.read_config(), size, corpus=corpus, labels=labels, summary=summary
        )
        return self._write_card_text(text)

    def refresh_card_calibration(self) -> Path | None:
        """Rewrite the card's calibration section and version / uncertainty line (after a
        recalibration); None when the model has no card."""
        if not self.path(CARD_NAME).exists():
            return None
        text = card.refresh_calibration(
            self.read_card(), self.read_config(), self.read_calibration(), self.read_metrics()
        )
        return self._write_card_text(text)

    # ------------------------------------------------------------------ the pretrained copy

    def pretrained_copy(self, config: ArtifactConfig | None = None) -> Artifact | None:
        """The pretrained model an augmented model carries (it computes the augmentation
        inputs); None for a model without augmentation."""
        config = config or self.read_config()
        if config.augment is None:
            return None
        return Artifact(self.path(config.augment.source))

    def write_pretrained_copy(self, source: Artifact, subdir: str) -> Artifact:
        """Copy what prediction needs of ``source`` (config, weights, calibration, domain,
        its own pretrained copies) into ``subdir`` of this model, replacing any copy there."""
        dest = self.path(subdir)
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(
            source.directory, dest, ignore=shutil.ignore_patterns(*PRETRAINED_COPY_IGNORE)
        )
        return Artifact(dest)

    # ------------------------------------------------------------------ the whole directory

    def copy_to(self, dest: str | Path) -> Artifact:
        """A writable copy of the model in ``dest`` (a new or empty directory; the training
        curves left out; made writable, as shipped package data may be read-only)."""
        dest = Path(dest)
        shutil.copytree(
            self.directory, dest, ignore=shutil.ignore_patterns(LOGS_DIR), dirs_exist_ok=True
        )
        for path in [dest, *dest.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        return Artifact(dest)

    def pack(self) -> dict[str, bytes]:
        """Every file of the model: its path relative to the directory (``/``-separated) ->
        its bytes, in path order; what :meth:`unpack` writes back."""
        files = sorted(p for p in self.directory.rglob("*") if p.is_file())
        return {
            rel: self.path(rel).read_bytes()
            for rel in (p.relative_to(self.directory).as_posix() for p in files)
        }

    @classmethod
    def unpack(cls, files: Mapping[str, bytes], target: str | Path) -> Artifact:
        """Write packed ``files`` (:meth:`pack`) as the model directory ``target``: into a
        temporary directory beside it, renamed once complete, so that a reader never sees half
        a model. A path leading outside the directory is refused (``ArtifactError``); when
        another process made ``target`` first, its model is kept."""
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.parent / f".{target.name}.{uuid.uuid4().hex}"
        for rel, data in files.items():
            path = staging / rel
            if not path.resolve().is_relative_to(staging.resolve()):
                raise ArtifactError(
                    f"model {target.name!r}: file path {rel!r} leaves its directory"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        try:
            staging.rename(target)
        except OSError:  # another process unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
            if not cls(target).exists():
                raise
        return cls(target)


__all__ = ["PRETRAINED_COPY_IGNORE", "Artifact"]
