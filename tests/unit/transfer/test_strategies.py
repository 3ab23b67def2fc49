"""Fine-tuning strategies: one registered class per strategy name, unknown names refused as
before, frozen encoder stays bit-identical and in eval mode, strict key checks, fresh heads,
and inductive label augmentation never reads measured low-fidelity labels."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import get_args

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from molprop.data.loader import GraphDataset
from molprop.errors import ArtifactError, ConfigError
from molprop.featurize.graph2d import Graph2DFeaturizer
from molprop.models.config import ModelConfig, TrainConfig
from molprop.models.model import MolPropModel
from molprop.training.fit import fit_member
from molprop.training.lightning_module import LitMolProp
from molprop.training.resume import FINAL_TENSORS, STATE_TENSORS
from molprop.training.train import TrainRequest
from molprop.training.warm_start import init_from_pretrained
from molprop.transfer import STRATEGIES, StrategyName
from molprop.transfer.datasets import qm8_e1_frame
from molprop.transfer.finetune import FinetuneRequest, run_finetune
from molprop.transfer.pretrain import run_pretrain
from molprop.transfer.strategies import REGISTRY, freeze_encoder, get_strategy, unfreeze_encoder

TINY = dict(hidden_dim=16, heads=2, layers="MSP", num_seeds=4, head_hidden=16)


@pytest.fixture(scope="module")
def esol_graphs(esol_frame):
    feat = Graph2DFeaturizer()
    sub = esol_frame.iloc[:48]
    return [feat.from_smiles(s) for s in sub["smiles"]], sub["logp"].to_numpy()[:, None]


def _model(graphs, n_extra: int = 0, dropout: float = 0.0) -> MolPropModel:
    g = graphs[0]
    return MolPropModel.from_config(
        ModelConfig(
            node_dim=g.x.shape[1],
            edge_dim=g.edge_attr.shape[1],
            n_tasks=1,
            n_extra=n_extra,
            dropout=dropout,
            **TINY,
        )
    )


#: what each strategy needs and does: (augment, linear skip, head sees x, frozen encoder,
#: inductive only, measured training targets)
TRAITS = {
    "full": (None, False, True, False, False, False),
    "freeze-encoder": (None, False, True, True, False, False),
    "label-augment": ("label", True, True, False, False, False),
    "embed-augment": ("embed", False, True, False, False, False),
    "delta": ("label", True, False, False, False, False),
    "delta-measured": ("label", True, False, False, True, True),
}


def test_the_registry_has_one_strategy_per_name_of_the_literal():
    names = get_args(StrategyName)
    assert STRATEGIES == names and set(REGISTRY) == set(names) == set(TRAITS)
    for name in names:
        strategy = get_strategy(name)
        assert strategy is REGISTRY[name] and strategy.name == name
        traits = (
            strategy.augment,
            strategy.linear_skip,
            strategy.extra_to_head,
            strategy.freezes_encoder,
            strategy.inductive_only,
            strategy.measured_targets,
        )
        assert traits == TRAITS[name], name
        assert strategy.can_keep_head == (strategy.augment is None)
    assert len({type(s) for s in REGISTRY.values()}) == len(names)  # a class each


UNKNOWN = (
    "unknown strategy 'fine'; choose one of ('full', 'freeze-encoder', 'label-augment', "
    "'embed-augment', 'delta', 'delta-measured')"
)


def test_an_unknown_strategy_is_refused_with_the_known_names(tmp_path, capsys):
    with pytest.raises(ConfigError) as found:
        get_strategy("fine")
    assert str(found.value) == UNKNOWN
    request = FinetuneRequest(
        pretrained=tmp_path / "none",
        data=tmp_path / "none.csv",
        target_columns=["y"],
        out=tmp_path / "out",
        strategy="fine",  # type: ignore[arg-type]
        progress=False,
    )
    with pytest.raises(ConfigError) as found:
        run_finetune(request)
    assert str(found.value) == UNKNOWN and not (tmp_path / "out").exists()
    from molprop.cli import finetune

    parser = argparse.ArgumentParser(prog="molprop")
    finetune.add_parser(parser.add_subparsers(), "finetune")
    args = ["finetune", "--data", "x.csv", "--target-columns", "y", "--out", "o"]
    assert parser.parse_args([*args, "--strategy", "delta"]).transfer_strategy == "delta"
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([*args, "--strategy", "fine"])
    assert exited.value.code == 2
    assert (
        "argument --strategy: invalid choice: 'fine' (choose from 'full', 'freeze-encoder', "
        "'label-augment', 'embed-augment', 'delta', 'delta-measured')"
    ) in capsys.readouterr().err


class _Modes(L.Callback):
    """Records the encoder's and the head's train mode at every training step."""

    def __init__(self) -> None:
        self.seen: set[tuple[bool, bool]] = set()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.seen.add((pl_module.model.encoder.training, pl_module.model.head.training))


@pytest.mark.parametrize("start_candidate", [False, True])
def test_freeze_encoder_keeps_encoder_bit_identical(esol_graphs, start_candidate):
    graphs, y = esol_graphs
    pre = _model(graphs, dropout=0.2)
    state = {k: v.clone() for k, v in pre.state_dict().items()}
    model = freeze_encoder(
        init_from_pretrained(pre.config, state, "test", fresh_head=False, seed=0)
    )
    assert "train" not in vars(model.encoder)  # frozen, not patched
    y = (y - y.mean()) / y.std()
    modes = _Modes()
    data = GraphDataset(graphs, y)
    fit_member(
        model,
        data,
        data if start_candidate else None,  # the start is scored (eval mode), then training
        TrainConfig(epochs=3, lr=1e-2),
        seed=0,
        progress=False,
        task_type="regression",
        extra_callbacks=[modes],
        start_candidate=start_candidate,
    )
    # every step (also after validation and scoring the start): dropout off in the frozen part
    assert modes.seen == {(False, True)}
    after = model.state_dict()
    enc = [k for k in after if k.startswith("encoder.")]
    assert enc and all(torch.equal(after[k], state[k]) for k in enc)
    trained = [k for k in after if k.startswith(("readout.", "head."))]
    # (with the start a candidate, the start may be kept: no epoch beat it)
    assert start_candidate or any(not torch.equal(after[k], state[k]) for k in trained)
    lit = LitMolProp(model, "regression")
    lit.train()
    assert not model.encoder.training and model.head.training
    unfreeze_encoder(model)
    lit.train()
    assert model.encoder.training and all(p.requires_grad for p in model.encoder.parameters())


def test_strict_key_mismatch_raises_naming_the_keys(esol_graphs):
    graphs, _ = esol_graphs
    pre = _model(graphs)
    state = dict(pre.state_dict())
    missing = next(k for k in state if k.startswith("encoder."))
    bad = {k: v for k, v in state.items() if k != missing}
    with pytest.raises(ArtifactError, match=missing.split(".", 1)[1]):
        init_from_pretrained(pre.config, bad, "x", fresh_head=True, seed=0)
    with pytest.raises(ArtifactError, match="encoder.extra_weight"):
        init_from_pretrained(
            pre.config,
            {**state, "encoder.extra_weight": torch.zeros(1)},
            "x",
            fresh_head=False,
            seed=0,
        )
    shape = {**state, missing: torch.zeros(3, 3, 3)}
    with pytest.raises(ArtifactError, match="shape mismatch"):
        init_from_pretrained(pre.config, shape, "x", fresh_head=False, seed=0)


def test_fresh_head_loads_encoder_and_readout_only(esol_graphs):
    graphs, _ = esol_graphs
    pre = _model(graphs)
    config = _model(graphs, n_extra=3).config
    model = init_from_pretrained(config, pre.state_dict(), "x", fresh_head=True, seed=123)
    own, ref = model.state_dict(), pre.state_dict()
    for k in own:
        if k.startswith(("encoder.", "readout.")):
            assert torch.equal(own[k], ref[k]), k
    assert own["head." + next(k.split(".", 1)[1] for k in own if k.startswith("head."))].shape != ()
    assert any(
        own[k].shape != ref[k].shape or not torch.equal(own[k], ref[k])
        for k in own
        if k.startswith("head.")
    )


@pytest.fixture(scope="module")
def qm8_tiny(tmp_path_factory):
    """Pretrained tiny model (low = E1-PBE0) and train/val/test tables with a low column."""
    root = tmp_path_factory.mktemp("qm8")
    frame = qm8_e1_frame().iloc[:160].reset_index(drop=True)
    frame.iloc[:100].to_csv(root / "pretrain.csv", index=False)
    run_pretrain(
        TrainRequest(
            data=root / "pretrain.csv",
            smiles_column="smiles",
            target_columns=["e1_pbe0"],
            out=root / "pre",
            model=TINY,
            train=TrainConfig(epochs=2, lr=1e-3),
            progress=False,
        ),
        0.0,
    )
    parts = {"train": frame.iloc[100:130], "val": frame.iloc[130:145], "test": frame.iloc[145:]}
    return root, parts


POISON = {"train": np.nan, "val": 1e9, "test": -1e9}


def _request(root, paths, out, **options) -> FinetuneRequest:
    """Fine-tune the tiny pretrained model on the tables ``paths`` (train/val/test) for E1 CC2."""
    return FinetuneRequest(
        pretrained=root / "pre",
        data=paths["train"],
        val_data=paths["val"],
        test_data=paths["test"],
        target_columns=["e1_cc2"],
        out=out,
        progress=False,
        **options,
    )


def _finetune(root, parts, mode: str, tag: str, poison: bool):
    paths = {}
    for name, part in parts.items():
        part = part.copy()
        if poison:
            part["e1_pbe0"] = POISON[name]
        paths[name] = root / f"{tag}_{name}.csv"
        part.to_csv(paths[name], index=False)
    out = root / tag
    run_finetune(
        _request(
            root,
            paths,
            out,
            strategy="label-augment",
            mode=mode,
            train=TrainConfig(epochs=1, lr=1e-3),
        )
    )
    return pd.read_json(out / "metrics.json")["test"]["ensemble"]["rmse"]


def test_inductive_label_augment_never_reads_measured_low_labels(qm8_tiny):
    root, parts = qm8_tiny
    clean = _finetune(root, parts, "inductive", "ind_clean", False)
    assert _finetune(root, parts, "inductive", "ind_poison", True) == clean
    # positive control: transductive mode does read them, so poisoning changes its result
    trans = _finetune(root, parts, "transductive", "tr_clean", False)
    assert _finetune(root, parts, "transductive", "tr_poison", True) != trans


def _tables(root, parts) -> dict:
    paths = {}
    for name, part in parts.items():
        paths[name] = root / f"plain_{name}.csv"
        part.to_csv(paths[name], index=False)
    return paths


def test_keep_head_reuses_the_pretrained_head_only_when_the_task_matches(qm8_tiny):
    root, parts = qm8_tiny
    paths = _tables(root, parts)
    # target e1_cc2, a new name: the head would be re-initialised
    request = _request(
        root, paths, root / "keep", keep_head=True, train=TrainConfig(epochs=1, lr=1e-3)
    )
    result = run_finetune(request)
    assert result.fresh_head is False and result.metrics["training"]["fresh_head"] is False
    pre = load_file(str(root / "pre" / "members" / "0" / "model.safetensors"))
    fresh = run_finetune(replace(request, out=root / "nokeep", keep_head=False))
    assert fresh.fresh_head is True
    # one epoch from the pretrained head stays closer to it than one from a fresh head
    kept = load_file(str(root / "keep" / "members" / "0" / "model.safetensors"))
    new = load_file(str(root / "nokeep" / "members" / "0" / "model.safetensors"))
    key = next(k for k in pre if k.startswith("head.") and k.endswith("weight"))
    assert (kept[key] - pre[key]).abs().max() < (new[key] - pre[key]).abs().max()
    with pytest.raises(ConfigError, match="--keep-head"):
        run_finetune(replace(request, out=root / "bad", strategy="label-augment"))


def test_unfreeze_after_trains_the_frozen_encoder_later(qm8_tiny):
    root, parts = qm8_tiny
    paths = _tables(root, parts)
    out = root / "staged"
    result = run_finetune(
        _request(root, paths, out, unfreeze_after=1, train=TrainConfig(epochs=3, lr=1e-3))
    )
    assert "stage1" in result.metrics["training"]["members"][0]
    pre = load_file(str(root / "pre" / "members" / "0" / "model.safetensors"))
    stage1 = load_file(str(out / "stage1" / "logs" / "member_0" / "checkpoint" / FINAL_TENSORS))
    final = load_file(str(out / "members" / "0" / "model.safetensors"))
    enc = [k for k in pre if k.startswith("encoder.")]
    assert all(torch.equal(stage1[k], pre[k]) for k in enc)  # frozen for the first epoch
    # then trained: the weights after the first unfrozen epoch (the resume state; the kept
    # result may still be stage 1's if no unfrozen epoch beat it on validation)
    state = out / "logs" / "member_0" / "checkpoint" / STATE_TENSORS
    after = {k.removeprefix("model."): v for k, v in load_file(str(state)).items()}
    assert any(not torch.equal(after[k], pre[k]) for k in enc)
    best = result.metrics["training"]["members"][0]["best_epoch"]
    assert any(not torch.equal(final[k], pre[k]) for k in enc) == (best >= 0)
    with pytest.raises(ConfigError, match="--unfreeze-after 3"):
        run_finetune(
            FinetuneRequest(
                pretrained=root / "pre",
                data=paths["train"],
                target_columns=["e1_cc2"],
                out=root / "bad2",
                unfreeze_after=3,
                train=TrainConfig(epochs=3),
                progress=False,
            )
        )


def test_benchmark_cli_passes_keep_head_and_unfreeze_after():
    import argparse

    from molprop.cli import transfer_benchmark

    parser = argparse.ArgumentParser()
    transfer_benchmark.add_parser(parser.add_subparsers(), "transfer-benchmark")
    base = ["transfer-benchmark", "--data", "x.csv", "--low-column", "a", "--high-column", "b"]
    base += ["--high-sizes", "10", "5", "5", "--out", "o"]
    args = parser.parse_args([*base, "--keep-head", "--unfreeze-after", "4", "--cross-fit", "2"])
    assert args.keep_head and args.unfreeze_after == 4 and args.cross_fit == 2
    defaults = parser.parse_args(base)
    assert not defaults.keep_head and defaults.unfreeze_after == 0 and defaults.cross_fit == 3
