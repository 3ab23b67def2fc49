"""Foundation pretraining on a tiny real corpus: the loss falls, a stopped run resumes where it
stopped (epoch, step, optimiser), and the exported artifact is a starting point for fine-tuning."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from molprop.artifact.store import load_config, member_path
from molprop.corpus.build import CorpusSource, build_corpus
from molprop.corpus.labels import compute_labels
from molprop.training.foundation import (
    CHECKPOINTS,
    LAST,
    PackedGraphs,
    PretrainConfig,
    export_foundation,
    featurize_shards,
    pack_graphs,
    pretrain,
)

N = 240
CONFIG = PretrainConfig(
    val=40, epochs=4, batch_size=25, lr=3e-3, warmup_steps=4, val_every=4, checkpoint_minutes=60
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, esol_frame):
    root = tmp_path_factory.mktemp("foundation")
    src = root / "esol.csv"
    esol_frame[["smiles"]].to_csv(src, index=False)
    data = root / "data"
    build_corpus([CorpusSource("esol", str(src), "test")], data, progress=False)
    compute_labels(data, N, workers=1, shard_size=100, progress=False)
    return data


def _metrics(run) -> list[dict]:
    with open(run / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_packed_shards_give_back_the_featurised_graphs(corpus):
    from molprop.corpus.build import read_corpus
    from molprop.featurize import FeaturizerConfig, build_featurizer

    shards = featurize_shards(corpus, progress=False)
    assert len(shards) == 3
    smiles = read_corpus(corpus, N)
    targets = np.zeros((N, 1), np.float32)
    ds = PackedGraphs(shards, targets, np.arange(N))
    f = build_featurizer(FeaturizerConfig())
    for row in (0, 99, 100, 239):
        want, got = f.from_smiles(smiles[row]), ds.graph(row)
        assert np.array_equal(want.x, got.x) and np.array_equal(want.edge_attr, got.edge_attr)
        assert np.array_equal(want.edge_index, got.edge_index)
    packed = pack_graphs([f.from_smiles("CCO"), None])
    assert packed["ok"].tolist() == [True, False] and packed["n_nodes"].tolist() == [3, 0]


def test_pretraining_lowers_the_loss_and_resumes_where_it_stopped(corpus, tmp_path):
    run = tmp_path / "run"
    # stopped inside epoch 2 (200 training molecules: 8 batches per epoch), as a killed run
    # would be
    pretrain(corpus, run, CONFIG, threads=1, max_steps=13, progress_every=1000)
    stopped = torch.load(run / CHECKPOINTS / LAST, map_location="cpu", weights_only=False)
    assert (stopped["epoch"], stopped["global_step"]) == (1, 13)
    assert (run / CHECKPOINTS / "epoch_001.ckpt").exists()
    before = _metrics(run)
    pretrain(corpus, run, CONFIG, threads=1, progress_every=1000)
    rows = _metrics(run)
    assert rows[: len(before)] == before  # appended, not rewritten
    after = rows[len(before) :]
    # the epoch count and the step count go on: epoch 2 finishes at step 16 (not 8 or 21)
    assert [int(r["step"]) for r in after][:2] == [16, 20]
    assert int(after[0]["epoch"]) == 2 and int(rows[-1]["epoch"]) == 4
    final = torch.load(run / CHECKPOINTS / LAST, map_location="cpu", weights_only=False)
    assert final["global_step"] == 4 * 8
    assert int(final["foundation_compute"]["molecules_seen"]) == 4 * (N - CONFIG.val)
    # the optimiser state came back (Adam's step count went on from 13)
    state = final["optimizer_states"][0]["state"]
    assert int(next(iter(state.values()))["step"]) == 32
    val = [float(r["val_loss"]) for r in rows]
    assert val[-1] < 0.85 * val[0], val


def test_resume_refuses_another_architecture(corpus, tmp_path):
    from molprop.errors import ConfigError

    run = tmp_path / "run"
    pretrain(corpus, run, CONFIG, threads=1, max_steps=2, progress_every=1000)
    other = PretrainConfig(**{**CONFIG.__dict__, "hidden": 32})
    with pytest.raises(ConfigError, match="hidden=32"):
        pretrain(corpus, run, other, threads=1, max_steps=3)


def test_export_is_an_artifact_finetune_starts_from(corpus, tmp_path, esol_frame, monkeypatch):
    from molprop.cli.main import main
    from molprop.training.warm_start import InitSource

    run = tmp_path / "run"
    pretrain(corpus, run, CONFIG, threads=1, max_steps=6, progress_every=1000)
    models = tmp_path / "models"
    art = export_foundation(run, models / "foundation")
    config = load_config(art)
    assert config.name == "foundation" and config.featurizer.kind == "2d"
    assert config.model.hidden_dim == 64 and config.model.n_tasks == len(config.task.target_names)
    card = (art / "card.md").read_text()
    assert "## Corpus" in card and "RDKit 2D descriptors" in card and "MB of safetensors" in card
    assert member_path(art, 0).stat().st_size < 2_000_000
    ckpt = torch.load(run / CHECKPOINTS / LAST, map_location="cpu", weights_only=True)
    weights = load_file(str(member_path(art, 0)))
    key = next(k for k in weights if k.startswith("encoder."))
    assert torch.equal(weights[key], ckpt["state_dict"][f"model.{key}"])
    # the exported encoder is where a new task starts: encoder loaded, a fresh head
    source = InitSource.open(art)
    mc = source.model_config(1, {}, config.model.node_dim, config.model.edge_dim)
    member = source.member(mc, 0, seed=0)
    assert torch.equal(member.state_dict()[key], weights[key])
    assert member.head.n_tasks == 1
    # `molprop finetune` without --from starts from the model named foundation
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(models))
    data = tmp_path / "esol.csv"
    esol_frame.head(80).to_csv(data, index=False)
    out = tmp_path / "ft"
    code = main(
        [
            "finetune",
            "--data",
            str(data),
            "--target",
            "logp",
            "--epochs",
            "1",
            "--split-type",
            "random",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    ft = load_config(out)
    assert ft.provenance.finetuned_from.endswith("foundation")
    assert ft.task.target_names == ("logp",) and ft.provenance.fresh_head is True
