"""Predictor: artifact directory -> predictions with uncertainty and per-row status.

Every entry point runs the stages of :mod:`molprop.inference.pipeline` (parse/screen →
featurise → augment → model → domain → intervals), SMILES and structures alike. Output row i
always corresponds to input row i. Each row has ``status`` (``ok``,
``invalid_input``, ``unsupported`` or ``error``, see :mod:`molprop.inference.rows`) and
``error`` (the reason, empty when ok). SMILES pass the chemistry checks first
(:mod:`molprop.inference.screen`): ``standardized_smiles`` is the molecule the model read. A
model with an applicability domain adds ``in_domain`` (missing where there is no prediction)
and ``similarity`` (max Tanimoto similarity to the training set, NaN where no prediction) of
the molecule the model read (for a structure: the one perceived from its coordinates).
Each target's column is followed by ``<target>_unit`` (its unit, when the model records one)
and, for a model that stores its predictions over approved drugs, ``<target>_percentile`` (the
value's percentile among them, 0-100).
Ensembles add a
``<target>_std`` column (spread of the members). Calibrated artifacts add
``<target>_low`` / ``<target>_high`` (regression: conformal interval, ``interval=0.9`` by
default) or report Platt-calibrated probabilities (classification); see
:mod:`molprop.inference.intervals`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import pandas as pd

from molprop.artifact.calibration import DEFAULT_LEVEL
from molprop.artifact.config import ArtifactConfig
from molprop.artifact.coverage import MeasuredCoverage, measured_coverage
from molprop.artifact.handle import Artifact
from molprop.chem.structures import STRUCTURE_SUFFIXES, is_structure_path, read_structures
from molprop.errors import ConfigError, DataError, PredictionCancelled
from molprop.featurize import build_featurizer
from molprop.graph import MolGraph
from molprop.inference import pipeline
from molprop.inference.augment import Augmenter
from molprop.inference.intervals import check_servable, interval_level
from molprop.inference.rows import (
    STATUS_ERROR,
    join_outputs,
    split_failures,
)
from molprop.inference.screen import ScreenedFeaturizer, WorkLimits
from molprop.io.structures import structure_frame
from molprop.models.predict import forward_members

log = logging.getLogger(__name__)

#: ``torch``: the members as torch modules; ``onnxruntime``: their ONNX export on ONNX Runtime.
Backend = Literal["torch", "onnxruntime"]
BACKENDS: tuple[str, ...] = get_args(Backend)

#: see :func:`molprop.inference.pipeline.standardized_smiles`
standardized_smiles = pipeline.standardized_smiles


class Predictor:
    """Loaded model artifact (all ensemble members) ready to predict. Every entry point runs
    the stages of :mod:`molprop.inference.pipeline`, which read the loaded parts below."""

    def __init__(
        self,
        artifact: Artifact | str | Path,
        config: ArtifactConfig,
        members: list,
        backend: str = "torch",
    ) -> None:
        #: the model directory's handle (given, or made from a directory), which every part
        #: below is read through
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact(Path(artifact))
        self.directory = self.artifact.directory
        self.config = config
        self.members = members
        self.backend = backend
        self.featurizer = build_featurizer(config.featurizer)
        #: the extra inputs of an augmented transfer model (its pretrained copy, loaded on first
        #: use); none for other models
        self.augmenter = Augmenter(self.artifact, config)
        self.domain = self.artifact.read_domain()  # None if the artifact has none
        elements = None if self.domain is None else self.domain.elements
        #: the featuriser behind the chemistry checks, with the training set's elements (the
        #: organic subset for a model that does not record them)
        self.screened = ScreenedFeaturizer(
            self.featurizer, None if elements is None else frozenset(elements)
        )
        self.calibration = self.artifact.read_calibration()  # None: written before calibration
        #: predictions over approved drugs (percentiles); None: the model stores none
        self.reference = self.artifact.read_reference()

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        backend: Backend = "torch",
        onnx: str | Path | None = None,
    ) -> Predictor:
        """Load a model by name (``"solubility"``: looked up in ``$MOLPROP_MODEL_DIR`` and the
        shipped ``pretrained/`` only) or from an artifact directory (a ``Path`` or a string with
        a path separator, e.g. ``"./my_model"``); see :meth:`Artifact.open
        <molprop.artifact.Artifact.open>`.

        ``backend="onnxruntime"``: the members run as ONNX graphs on ONNX Runtime (CPU) from the
        export at ``onnx`` (default ``DIR/onnx/``, written by ``molprop export``); the output
        DataFrame is the torch backend's (stds, intervals, in_domain, statuses)."""
        if backend not in BACKENDS:
            raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
        artifact = Artifact.open(name_or_path)
        config = artifact.read_config()
        members: list = artifact.load_members(config)
        if backend == "onnxruntime":
            members = artifact.load_onnx_members(config, members, location=onnx)
        return cls(artifact, config, members, backend=backend)

    @property
    def target_names(self) -> list[str]:
        return list(self.config.task.target_names)

    @property
    def task_type(self) -> str:
        return self.config.task.task_type

    def interval_coverage(self) -> dict[str, tuple[MeasuredCoverage, ...]]:
        """target -> how its intervals covered the model's test molecules, by level
        (:func:`molprop.artifact.coverage.measured_coverage` of ``metrics.json``; empty for a
        model without a calibration or without a measured test part)."""
        if self.calibration is None:
            return {}
        return measured_coverage(self.artifact.read_metrics())

    @property
    def reads_structures(self) -> bool:
        """True for a model with the 3D featuriser: besides SMILES (conformers embedded) it
        predicts structures with their own coordinates (:meth:`predict_structures`,
        :meth:`predict_structure_file`)."""
        return self.config.featurizer.kind == "3d"

    def featurize(self, inputs: Sequence[object]) -> list[MolGraph | Exception]:
        """SMILES -> graphs of the standardised molecules, or each row's exception (pipeline
        stages 1-2: the chemistry checks included, see :mod:`molprop.inference.screen`)."""
        return pipeline.featurize_smiles(self, inputs)

    def predict_graphs(
        self,
        items: Sequence[MolGraph | Exception],
        batch_size: int = 256,
        device=None,
        should_stop=None,
        *,
        interval: float | str | None = None,
        calibrated: bool = True,
        low: object | None = None,
    ) -> pd.DataFrame:
        """Predictions for already-featurised rows (an Exception marks a failed row): pipeline
        stages 3-6 without the domain (the rows' molecules are not given).
        ``low``: per-row measured low-fidelity labels (see :meth:`predict`).
        ``device``: a ``torch.device`` (default: the GPU if there is one, else the CPU).
        ``should_stop``: asked before every batch (see :meth:`predict`). ``interval``: level of
        the ``<target>_low`` / ``_high`` columns (default none here: the rows' domain is
        unknown, so the std bins and the pooled bin serve; :meth:`predict` knows it).
        ``calibrated=False``: the ensemble's raw mean probabilities (calibration fitting)."""
        return pipeline.predict_rows(
            self,
            items,
            level=self.interval_level(interval),
            low=low,
            domain=False,
            batch_size=batch_size,
            device=device,
            should_stop=should_stop,
            calibrated=calibrated,
        )

    def interval_level(self, interval: float | str | None) -> float | None:
        """``interval`` checked (see :func:`~molprop.inference.intervals.interval_level`; above
        what the calibration set serves: ``ConfigError``); None when off."""
        level = interval_level(interval)
        check_servable(self.calibration, level)
        return level

    def augment_features(
        self, graphs: Sequence[MolGraph], low: np.ndarray | None = None
    ) -> np.ndarray | None:
        """Extra per-graph inputs of a label/embed-augmented fine-tuned model (made by the
        pretrained artifact stored inside it, or from ``low``, the (n, T_low) measured
        low-fidelity labels a model trained on them needs), or None for ordinary models
        (pipeline stage 3)."""
        return pipeline.augment(self, graphs, low)

    @property
    def low_columns(self) -> list[str]:
        """Measured low-fidelity labels this model needs per row (empty for most models)."""
        return pipeline.low_columns(self)

    def with_low(
        self, items: Sequence[MolGraph | Exception], low: object | None
    ) -> tuple[list[MolGraph | Exception], np.ndarray | None]:
        """Rows whose measured low-fidelity label is missing or not a number become
        ``invalid_input`` (the error names the row); -> (items, (n, T_low) labels or None).
        A model that needs no measured labels ignores ``low``; one that needs them refuses
        without (:class:`~molprop.inference.augment.MissingLowLabels`)."""
        return pipeline.measured_low(self, items, low)

    def refuse_without_low(self, given: bool) -> None:
        """A model trained on measured low-fidelity labels refuses (with the reason) when none
        are ``given``: checked before any row is featurised or written."""
        if self.low_columns and not given:
            pipeline.measured_low(self, [], None)

    def predict(
        self,
        smiles: Sequence[str] | str,
        batch_size: int = 256,
        *,
        max_heavy_atoms: int | None = None,
        max_smiles_length: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        interval: float | str | None = DEFAULT_LEVEL,
        low: object | None = None,
    ) -> pd.DataFrame:
        """SMILES -> DataFrame with ``smiles``, ``standardized_smiles`` (the molecule the model
        read after the chemistry checks: the input itself when they changed nothing, else the
        canonical SMILES of its largest organic fragment, neutralised; see
        :mod:`molprop.chem.standardize`), one column per target, ``<target>_std`` for
        ensembles, ``status`` and ``error``, ``in_domain``, and for a calibrated regression model
        ``<target>_low`` / ``<target>_high``: the conformal interval at level ``interval``
        (default 0.9; None or 0 for none); row i is input i. ``batch_size`` caps the molecules
        per forward pass (on a CPU a pass also stops at ``models.predict.CPU_MAX_TOKENS``).

        Work limits (:class:`~molprop.inference.screen.WorkLimits`): a molecule with more than
        ``max_heavy_atoms`` heavy atoms is a per-row ``invalid_input`` (checked by a cheap parse
        before featurising; the service screens heavy atoms itself before queueing, see
        ``api.budget``); ``max_smiles_length`` replaces ``chem.smiles.MAX_SMILES_LENGTH`` for
        this call; ``should_stop`` is asked before every row is featurised and before every
        batch, and when it returns true :class:`~molprop.errors.PredictionCancelled` is raised.

        ``low``: one measured low-fidelity label per row (a number, or a sequence for several
        :attr:`low_columns`), required by a transfer model trained on measured labels (it
        refuses without them); a missing or non-numeric value is that row's ``invalid_input``.
        """
        smiles = [smiles] if isinstance(smiles, str) else list(smiles)
        level = self.interval_level(interval)
        self.refuse_without_low(low is not None)
        limits = WorkLimits(max_smiles_length, max_heavy_atoms)
        items = pipeline.featurize_smiles(self, smiles, limits, should_stop)
        with limits.length_limit():
            out = pipeline.predict_rows(
                self,
                items,
                level=level,
                low=low,
                inputs=smiles,
                batch_size=batch_size,
                should_stop=should_stop,
            )
        out.insert(0, "smiles", smiles)
        out.insert(1, "standardized_smiles", pipeline.standardized_smiles(items))
        return out

    def featurize_smiles(
        self,
        smiles: Sequence[object],
        *,
        max_heavy_atoms: int | None = None,
        max_smiles_length: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[MolGraph | Exception]:
        """One graph (or the row's failure) per SMILES, under the work limits of
        :meth:`predict` (pipeline stages 1-2), for :meth:`predict_frame`'s ``items`` (models
        that screen alike can share them: a panel featurises once for all of them)."""
        limits = WorkLimits(max_smiles_length, max_heavy_atoms)
        return pipeline.featurize_smiles(self, smiles, limits, should_stop)

    @property
    def embedding_dim(self) -> int:
        """Width of :meth:`embed`'s vectors (the readout output of member 0)."""
        if self.backend != "torch":
            raise ConfigError("embed needs the torch backend, not " + self.backend)
        return int(self.members[0].embedding_dim)

    def embed_graphs(
        self,
        items: Sequence[MolGraph | Exception],
        batch_size: int = 256,
        device=None,
        should_stop: Callable[[], bool] | None = None,
    ) -> pd.DataFrame:
        """Embeddings of already-featurised rows (an Exception marks a failed row): columns
        ``emb_0`` .. ``emb_{d-1}``, ``status``, ``error``; row i is item i. See :meth:`embed`."""
        n, dim = len(items), self.embedding_dim
        values = np.full((n, dim), np.nan)
        status, error, ok = split_failures(items)
        if ok:
            try:
                emb = forward_members(
                    self.members[:1],
                    [item for item in items if not isinstance(item, Exception)],  # rows ``ok``
                    batch_size=batch_size,
                    device=device,
                    embed=True,
                    should_stop=should_stop,
                )[0]
            except PredictionCancelled:
                raise
            except Exception as exc:  # a model failure is reported per row, never raised
                log.exception("embedding failed")
                status[ok], error[ok] = STATUS_ERROR, f"model failure: {type(exc).__name__}: {exc}"
            else:
                values[ok] = emb
                for i in np.asarray(ok)[~np.isfinite(emb).all(axis=1)]:
                    status[i], error[i] = STATUS_ERROR, "model produced a non-finite embedding"
                    values[i] = np.nan
        frame = pd.DataFrame(values, columns=[f"emb_{j}" for j in range(dim)])
        frame["status"] = status
        frame["error"] = error
        return frame

    def embed(
        self,
        smiles: Sequence[str] | str,
        batch_size: int = 256,
        *,
        max_heavy_atoms: int | None = None,
        max_smiles_length: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> pd.DataFrame:
        """SMILES -> DataFrame with ``smiles``, ``emb_0`` .. ``emb_{d-1}``, ``status`` and
        ``error``; row i is input i, and a failed row keeps its place with NaN embeddings and
        its reason. The embedding is the encoder's pooled vector, the readout output the head
        reads (``MolPropModel.embed``: the mean over the PMA seeds and, with the size path, the
        size signal; :attr:`embedding_dim` wide), of ensemble member 0 (members are trained
        from different random starts, so their embedding spaces differ and are not averaged).
        It depends neither on the other molecules of the batch nor on how a molecule is
        written. Work limits and ``should_stop``: as for :meth:`predict`."""
        smiles = [smiles] if isinstance(smiles, str) else list(smiles)
        limits = WorkLimits(max_smiles_length, max_heavy_atoms)
        items = pipeline.featurize_smiles(self, smiles, limits, should_stop)
        out = self.embed_graphs(items, batch_size=batch_size, should_stop=should_stop)
        out.insert(0, "smiles", smiles)
        return out

    def explain(self, smiles: Sequence[str] | str, **options) -> list:
        """Atom attributions (Integrated Gradients on the token embedding layer): one
        :class:`~molprop.inference.explain.Explanation` per SMILES, in order, with per-atom
        weights, prediction, baseline and completeness delta; bad SMILES are per-row
        ``invalid_input``. ``options``: see :func:`molprop.inference.explain.explain`."""
        if self.backend != "torch":
            raise ConfigError("explain needs the torch backend (gradients), not " + self.backend)
        from molprop.inference.explain import explain  # Captum is loaded only to explain

        return explain(self, smiles, **options)

    def predict_structures(
        self,
        structures: Sequence[object],
        batch_size: int = 256,
        interval: float | str | None = DEFAULT_LEVEL,
    ) -> pd.DataFrame:
        """``ase.Atoms`` / pymatgen ``Molecule`` or ``Structure`` objects -> one row each, in
        order (``label``, targets, ``status``, ``error``, and for a model with an
        applicability domain ``in_domain`` / ``similarity`` of the molecule perceived from the
        coordinates, then the intervals). Needs a model with a 3D featuriser."""
        self._require_structures()
        level = self.interval_level(interval)
        structures = list(structures)
        items = pipeline.featurize_structures(self, structures)
        out = pipeline.predict_rows(self, items, level=level, batch_size=batch_size)
        labels = [
            s.get_chemical_formula()
            if hasattr(s, "get_chemical_formula")
            else str(getattr(s, "formula", type(s).__name__))
            for s in structures
        ]
        out.insert(0, "label", labels)
        return out

    def predict_structure_file(
        self,
        path: str | Path,
        batch_size: int = 256,
        interval: float | str | None = DEFAULT_LEVEL,
    ) -> pd.DataFrame:
        """One row per record of a structure file (extxyz, SDF, ...; see
        :func:`~molprop.chem.structures.read_structures`), in order: ``record``, ``label``, the
        record's info columns, then the prediction columns of :meth:`predict_structures` (an
        unreadable record is its row's ``invalid_input``; a prediction column named like an
        info column is ``pred_<name>``, see :func:`~molprop.inference.rows.join_outputs`).
        Needs a model with a 3D featuriser."""
        self._require_structures()
        level = self.interval_level(interval)
        if not is_structure_path(path):
            endings = ", ".join(STRUCTURE_SUFFIXES)
            raise DataError(f"{path} is not a structure file ({endings}, optionally .gz)")
        records = read_structures(path)
        frame, _ = structure_frame(records, "smiles")
        items = pipeline.featurize_structures(self, records)
        preds = pipeline.predict_rows(self, items, level=level, batch_size=batch_size)
        return join_outputs(frame, preds)

    def _require_structures(self) -> None:
        if not self.reads_structures:
            kind = self.config.featurizer.kind
            raise ConfigError(
                f"model {self.directory} uses the {kind!r} featurizer; "
                "structures need a model trained with --featurizer 3d"
            )

    def predict_frame(
        self,
        frame: pd.DataFrame,
        smiles_column: str,
        batch_size: int = 256,
        items: Sequence[MolGraph | Exception] | None = None,
        device=None,
        interval: float | str | None = DEFAULT_LEVEL,
        low_columns: Sequence[str] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> pd.DataFrame:
        """Input columns followed by ``standardized_smiles`` and the prediction columns; an
        output column named like an input column is ``pred_<name>`` (see
        :func:`~molprop.inference.rows.join_outputs`), the input column is kept as it was.
        ``items``: the rows already featurised (e.g. by worker processes), one per row.
        ``interval``: see :meth:`predict`. ``low_columns``: the frame's columns holding the
        measured low-fidelity labels (one per :attr:`low_columns` of the model).
        ``should_stop``: asked before every batch (see :meth:`predict`)."""
        level = self.interval_level(interval)
        low = None
        if low_columns:
            missing = [c for c in low_columns if c not in frame.columns]
            if missing:
                raise DataError(f"low-fidelity column(s) {missing} not in the input")
            low = frame[list(low_columns)].to_numpy(dtype=object)
        self.refuse_without_low(low is not None)
        inputs = frame[smiles_column].tolist()
        if items is None:
            items = pipeline.featurize_smiles(self, inputs)
        preds = pipeline.predict_rows(
            self,
            items,
            level=level,
            low=low,
            inputs=inputs,
            batch_size=batch_size,
            device=device,
            should_stop=should_stop,
        )
        preds.insert(0, "standardized_smiles", pipeline.standardized_smiles(items))
        return join_outputs(frame, preds)
