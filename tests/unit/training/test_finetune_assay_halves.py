"""benchmarks/finetune_assay: the held-out "assay" is exactly the shipped model's test split, cut
into scaffold-disjoint halves (no scaffold on both sides, nothing dropped or duplicated)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks.finetune_assay import assay_halves
from molprop.data.splits import murcko_scaffold
from molprop.pretrained_recipes import PRETRAINED


def test_halves_are_the_test_split_scaffold_disjoint():
    split = pd.read_csv(PRETRAINED / "solubility" / "split.csv")
    test_smiles = sorted(split.loc[split["split"] == "test", "smiles"])
    fine, evaluation = assay_halves("solubility", seed=0)
    assert sorted([*fine["smiles"], *evaluation["smiles"]]) == test_smiles
    assert abs(len(fine) - len(evaluation)) <= 0.2 * len(test_smiles)
    a = {murcko_scaffold(s) for s in fine["smiles"]}
    b = {murcko_scaffold(s) for s in evaluation["smiles"]}
    assert not a & b
    other, _ = assay_halves("solubility", seed=1)
    assert set(other["smiles"]) != set(fine["smiles"])  # the seed draws other halves


def test_a_kept_model_is_reused_only_for_the_same_command_and_data(tmp_path, monkeypatch) -> None:
    """A work directory kept from an earlier run (other defaults, other data) must not stand in
    for today's training: only a model trained by the same command on the same data is reused."""
    import benchmarks.finetune_assay as bench

    calls: list[list[str]] = []

    def cli(args, log):
        calls.append(args)
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        return 1.0

    monkeypatch.setattr(bench, "cli", cli)
    data, out = tmp_path / "a.csv", tmp_path / "m"
    data.write_text("smiles,y\nCCO,1\n")
    args = ["finetune", "--data", str(data), "--epochs", "40"]
    assert bench.train_once(args, out, tmp_path / "log") == 1.0
    assert bench.train_once(args, out, tmp_path / "log") is None  # same: reused
    assert bench.train_once(args[:-2], out, tmp_path / "log") == 1.0  # other command
    data.write_text("smiles,y\nCCO,2\n")
    assert bench.train_once(args[:-2], out, tmp_path / "log") == 1.0  # other data
    (out / bench.TRAINED_WITH).unlink()  # a model from before markers existed: retrained
    assert bench.train_once(args[:-2], out, tmp_path / "log") == 1.0
    assert len(calls) == 4
