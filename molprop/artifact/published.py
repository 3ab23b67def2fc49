"""The models fine-tune jobs published: stored in the job database (:mod:`molprop.jobstore`),
served as artifact directories extracted under a root folder.

A published model ``name`` made by job ``<id>`` is unpacked (:meth:`Artifact.unpack`) as
``<root>/<id>/<name>`` (``root``: ``<data dir>/models``) the first time it is asked for; a model deleted and published again
under the same name comes from another job, so it gets a new directory and an old copy is
never reused. Pass a :class:`PublishedModels` to :func:`~molprop.artifact.resolve.resolve_model`
(or :meth:`Artifact.open`) to find models by name among them first.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from molprop.artifact.handle import Artifact
from molprop.jobstore import store

#: the folder of the service's / worker's data directory the published models are extracted to
EXTRACTED_DIR = "models"


@dataclass(frozen=True)
class PublishedModels:
    """The published models of the job database ``engine``, extracted under ``root``."""

    engine: Engine
    root: Path

    @classmethod
    def in_data_dir(cls, engine: Engine, data_dir: str | Path) -> PublishedModels:
        """The published models of ``engine``, extracted under ``data_dir/models`` (the
        service's and the worker's data directory)."""
        return cls(engine, Path(data_dir) / EXTRACTED_DIR)

    def names(self) -> list[str]:
        """Names of the models fine-tune jobs published."""
        return store.model_names(self.engine)

    def find(self, name: str) -> Path | None:
        """The extracted directory of the published model ``name`` (extracted now if it is
        not yet); None when no model of that name is published."""
        job_id = store.model_job(self.engine, name)
        if job_id is None:
            return None
        target = Artifact(Path(self.root) / job_id / name)
        if target.exists():
            return target.directory
        files = store.model_files(self.engine, name)
        if not files:  # deleted since
            return None
        return Artifact.unpack(files, target.directory).directory

    def discard(self, job_id: str) -> None:
        """Remove the copies extracted from the job ``job_id`` (its model was deleted)."""
        shutil.rmtree(Path(self.root) / job_id, ignore_errors=True)


__all__ = ["EXTRACTED_DIR", "PublishedModels"]
