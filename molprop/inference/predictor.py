"""Predictor: artifact directory -> predictions with uncertainty and per-row status.

Output row i always corresponds to input row i. Each row has ``status`` (``ok``,
``invalid_input`` or ``error``) and ``error`` (the reason, empty when ok). Ensembles add a
``<target>_std`` column (spread of the members).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from molprop.data.table import featurize_rows
from molprop.errors import ArtifactError, ConfigError, InvalidInputError
from molprop.featurize import FeaturizerConfig, build_featurizer
from molprop.featurize.molgraph import MolGraph
from molprop.inference.domain import ApplicabilityDomain
from molprop.models.artifact import load_config, load_members
from molprop.models.config import ArtifactConfig
from molprop.models.predict import predict_targets

log = logging.getLogger(__name__)

STATUS_OK, STATUS_INVALID, STATUS_ERROR = "ok", "invalid_input", "error"
REPO_PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"


def pretrained_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("MOLPROP_MODEL_DIR"):
        dirs.append(Path(os.environ["MOLPROP_MODEL_DIR"]))
    dirs.append(REPO_PRETRAINED)
    return dirs


def resolve_model(name_or_path: str | Path) -> Path:
    """A directory path, or the name of a shipped model in ``pretrained/``."""
    path = Path(name_or_path)
    if (path / "config.json").exists():
        return path
    for base in pretrained_dirs():
        if (base / str(name_or_path) / "config.json").exists():
            return base / str(name_or_path)
    available = sorted({p.parent.name for b in pretrained_dirs() for p in b.glob("*/config.json")})
    raise ArtifactError(f"no model {str(name_or_path)!r}: not an artifact directory and not one "
                        f"of the shipped models {available}")  # fmt: skip


class Predictor:
    """Loaded model artifact (all ensemble members) ready to predict."""

    def __init__(self, directory: Path, config: ArtifactConfig, members: list) -> None:
        self.directory = Path(directory)
        self.config = config
        self.members = members
        self.featurizer = build_featurizer(FeaturizerConfig.from_dict(config.featurizer))
        self._augment_source = None  # transfer learning: pretrained model making extra inputs
        self.domain = ApplicabilityDomain.load(self.directory)  # None if the artifact has none

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path) -> Predictor:
        directory = resolve_model(name_or_path)
        config = load_config(directory)
        return cls(directory, config, load_members(directory, config))

    @property
    def target_names(self) -> list[str]:
        return list(self.config.task.target_names)

    @property
    def task_type(self) -> str:
        return self.config.task.task_type

    def featurize(self, inputs: Sequence[object]) -> list[MolGraph | Exception]:
        return featurize_rows(inputs, self.featurizer.from_smiles)

    def predict_graphs(
        self, items: Sequence[MolGraph | Exception], batch_size: int = 256, device=None
    ) -> pd.DataFrame:
        """Predictions for already-featurised rows (an Exception marks a failed row).
        ``device``: a ``torch.device`` (default: the GPU if there is one, else the CPU)."""
        n = len(items)
        names = self.target_names
        values = np.full((n, len(names)), np.nan)
        stds = np.full((n, len(names)), np.nan)
        status = np.full(n, STATUS_OK, dtype=object)
        error = np.full(n, "", dtype=object)
        ok = []
        for i, item in enumerate(items):
            if isinstance(item, InvalidInputError):
                status[i], error[i] = STATUS_INVALID, str(item)
            elif isinstance(item, Exception):
                status[i], error[i] = STATUS_ERROR, str(item)
            else:
                ok.append(i)
        if ok:
            graphs = [items[i] for i in ok]
            try:
                preds = predict_targets(self.members, graphs, self.config.task,
                                        self.augment_features(graphs), batch_size=batch_size,
                                        device=device)  # fmt: skip
            except Exception as exc:  # a model failure is reported per row, never raised
                log.exception("prediction failed")
                status[ok], error[ok] = STATUS_ERROR, f"model failure: {type(exc).__name__}: {exc}"
            else:
                values[ok] = preds.mean(0)
                stds[ok] = preds.std(0) if len(self.members) > 1 else np.nan
                bad = ~np.isfinite(values[ok]).all(axis=1)
                for i in np.asarray(ok)[bad]:
                    status[i], error[i] = STATUS_ERROR, "model produced a non-finite value"
                    values[i] = np.nan
        frame = pd.DataFrame(values, columns=names)
        if len(self.members) > 1:
            for j, name in enumerate(names):
                frame[f"{name}_std"] = stds[:, j]
        frame["status"] = status
        frame["error"] = error
        return frame

    def augment_features(self, graphs: Sequence[MolGraph]) -> np.ndarray | None:
        """Extra per-graph inputs of a label/embed-augmented fine-tuned model (made by the
        pretrained artifact stored inside it), or None for ordinary models."""
        spec = self.config.extra.get("augment")
        if not spec:
            return None
        from molprop.transfer.strategies import PretrainedSource, augmentation_features

        if self._augment_source is None:
            self._augment_source = PretrainedSource(self.directory / spec["source"])
        return augmentation_features(spec, self.directory, graphs, self._augment_source)

    def predict(self, smiles: Sequence[str] | str, batch_size: int = 256) -> pd.DataFrame:
        """SMILES -> DataFrame with ``smiles``, one column per target, ``<target>_std`` for
        ensembles, ``status`` and ``error``; row i is input i. ``batch_size`` caps the molecules
        per forward pass (on a CPU a pass also stops at ``models.predict.CPU_MAX_TOKENS``)."""
        smiles = [smiles] if isinstance(smiles, str) else list(smiles)
        out = self.predict_graphs(self.featurize(smiles), batch_size=batch_size)
        out.insert(0, "smiles", smiles)
        self._add_domain(out, smiles)
        return out

    def predict_structures(self, structures: Sequence[object], batch_size: int = 256) -> pd.DataFrame:
        """``ase.Atoms`` / pymatgen ``Molecule`` or ``Structure`` objects -> one row each, in
        order (``label``, targets, ``status``, ``error``). Needs a model with a 3D featuriser."""
        from_structure = getattr(self.featurizer, "from_structure", None)
        if from_structure is None:
            kind = self.config.featurizer.get("kind")
            raise ConfigError(f"model {self.directory} uses the {kind!r} featurizer; "
                              "structures need a model trained with --featurizer 3d")
        structures = list(structures)
        out = self.predict_graphs(featurize_rows(structures, from_structure), batch_size)
        labels = [s.get_chemical_formula() if hasattr(s, "get_chemical_formula")
                  else str(getattr(s, "formula", type(s).__name__)) for s in structures]  # fmt: skip
        out.insert(0, "label", labels)
        return out

    def _add_domain(self, out: pd.DataFrame, smiles: Sequence[object]) -> None:
        """Add the bool ``in_domain`` column (False for failed rows) if the artifact has a
        domain (see :mod:`molprop.inference.domain`)."""
        if self.domain is not None:
            ok = (out["status"] == STATUS_OK).to_numpy()
            text = [s if isinstance(s, str) else "" for s in smiles]
            out["in_domain"] = ok & self.domain.in_domain(text)

    def predict_frame(
        self,
        frame: pd.DataFrame,
        smiles_column: str,
        batch_size: int = 256,
        items: Sequence[MolGraph | Exception] | None = None,
        device=None,
    ) -> pd.DataFrame:
        """Input columns followed by prediction columns (clashing names are overwritten).
        ``items``: the rows already featurised (e.g. by worker processes), one per row."""
        if items is None:
            items = self.featurize(frame[smiles_column].tolist())
        preds = self.predict_graphs(items, batch_size, device=device)
        out = frame.reset_index(drop=True).copy()
        for col in preds.columns:
            out[col] = preds[col].values
        self._add_domain(out, frame[smiles_column].tolist())
        return out
