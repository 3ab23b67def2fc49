"""One ensemble member as an ONNX graph over padded token tensors, and its ONNX Runtime twin.

Featurisation, collation and the token sets / masks (``nn.edge_sets``) stay in Python; the
exported graph starts at the padded token features, so masks are inputs, never constants:

    features   (B, L, F) float32   token inputs, zeros in padded slots (``TokenSet.pad``)
    valid      (B, L)    bool      real tokens
    structure  (B, L, L) float32   M-block bias: 0 where query i may attend key j, -inf elsewhere
                                   (log multiplicity for periodic images: ``structure_bias``)
    n_nodes    (B,)      int64     atoms per graph (the readout's size path)
    extra      (B, E)    float32   per-graph extra inputs (augmented transfer models only)
    -> output  (B, T)    float32   the member's raw output (scaled regression values / logits)

B and L are dynamic axes. The graph computes what :meth:`MolPropModel.forward` computes: the
embedding MLP runs on the padded tensor and padded slots are zeroed, which gives the padded
layout ``TokenSet.pad`` gives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from molprop.data.batch import GraphBatch
from molprop.errors import ConfigError, ExportError
from molprop.models.model import MolPropModel
from molprop.nn.edge_sets import token_set

#: Input names of the exported graph, in order (``extra`` only when the model takes extras).
INPUT_NAMES = ("features", "valid", "structure", "n_nodes", "extra")
OUTPUT_NAME = "output"
#: Default ONNX opset of the export.
OPSET = 17


class PaddedTokenModel(nn.Module):
    """``model`` on padded token tensors (see the module docstring); shares its parameters."""

    def __init__(self, model: MolPropModel):
        super().__init__()
        if model.encoder.rbf is not None:
            raise ExportError(
                "models with a learnable distance basis (learnable_rbf > 0) cannot be exported: "
                "the learned basis changes the edge features before tokenisation"
            )
        self.model = model

    def forward(
        self,
        features: torch.Tensor,
        valid: torch.Tensor,
        structure: torch.Tensor,
        n_nodes: torch.Tensor,
        extra: torch.Tensor | None = None,
    ) -> torch.Tensor:
        encoder = self.model.encoder
        h0 = encoder.embed(features) * valid[..., None].to(features.dtype)  # (B, L, d)
        h = encoder.attend(h0, structure, valid[:, None, :])
        n_tokens = valid.sum(dim=1)  # (B,)
        emb = self.model.readout.pool(h, valid, n_tokens, n_nodes)
        return self.model.head_of(emb, extra)


def padded_inputs(batch: GraphBatch, model: MolPropModel) -> dict[str, np.ndarray]:
    """The exported graph's inputs for ``batch`` (numpy, by input name)."""
    config = model.config
    if config is None:
        raise ConfigError("the model has no config (build it with MolPropModel.from_config)")
    tokens = token_set(batch, config.token_kind, config.token_scheme)
    inputs = {
        "features": tokens.pad(tokens.features).float().numpy(),
        "valid": tokens.valid.numpy(),
        "structure": tokens.structure_bias().float().numpy(),
        "n_nodes": batch.n_nodes.to(torch.int64).numpy(),
    }
    if model.n_extra:
        if batch.extra is None:
            raise ValueError(f"model expects {model.n_extra} extra features per graph")
        inputs["extra"] = batch.extra.float().numpy()
    return inputs


def export_member(model: MolPropModel, example: GraphBatch, path: Path, opset: int = OPSET) -> None:
    """Write ``model`` as an ONNX file at ``path``, traced on ``example`` (a real batch) with
    dynamic batch and token axes. Raises :class:`ExportError` (naming the cause) when the
    model's operations cannot be exported."""
    wrapper = PaddedTokenModel(model).eval()
    inputs = padded_inputs(example, model)
    names = [n for n in INPUT_NAMES if n in inputs]
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    axes = {
        "features": {0: "batch", 1: "tokens"},
        "valid": {0: "batch", 1: "tokens"},
        "structure": {0: "batch", 1: "tokens", 2: "tokens"},
        "n_nodes": {0: "batch"},
        "extra": {0: "batch"},
        OUTPUT_NAME: {0: "batch"},
    }
    try:
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                args,
                str(path),
                input_names=names,
                output_names=[OUTPUT_NAME],
                dynamic_axes={k: v for k, v in axes.items() if k in names or k == OUTPUT_NAME},
                opset_version=opset,
                dynamo=False,
            )
    except Exception as exc:  # torch.onnx raises several types; one typed error for the caller
        raise ExportError(
            f"ONNX export of {path.name} failed: {type(exc).__name__}: {exc}"
        ) from exc


class OnnxMember:
    """One exported member run by ONNX Runtime (CPU), called like a :class:`MolPropModel` on a
    :class:`GraphBatch` (so ``models.predict.forward_members`` batches it the same way).
    ``model`` is the torch member the graph was exported from (its config and shapes: the
    parameters are not used)."""

    def __init__(self, path: Path, model: MolPropModel, threads: int | None = None):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ConfigError(
                "backend 'onnxruntime' needs the 'onnx' extra (missing: onnxruntime): "
                'pip install "molprop[onnx]"'
            ) from exc
        options = ort.SessionOptions()
        threads = threads or torch.get_num_threads()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle threads sleep rather than spin (as OMP_WAIT_POLICY=PASSIVE does for torch)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.path = Path(path)
        self.session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.reference = model
        self.config = model.config

    @property
    def n_tasks(self) -> int:
        return self.reference.n_tasks

    @property
    def n_extra(self) -> int:
        return self.reference.n_extra

    @property
    def embedding_dim(self) -> int:
        return self.reference.embedding_dim

    def to(self, device: torch.device | str) -> OnnxMember:
        if torch.device(device).type != "cpu":
            raise ConfigError("backend 'onnxruntime' runs on the CPU only")
        return self

    def eval(self) -> OnnxMember:
        return self

    def embed(self, batch: GraphBatch) -> torch.Tensor:
        raise ConfigError("the ONNX export computes predictions only, not embeddings")

    def __call__(self, batch: GraphBatch) -> torch.Tensor:
        inputs = padded_inputs(batch, self.reference)
        (out,) = self.session.run([OUTPUT_NAME], {n: inputs[n] for n in self.input_names})
        return torch.from_numpy(out)
