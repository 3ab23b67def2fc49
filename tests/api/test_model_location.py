"""The service finds models where the library does: one definition (``molprop.artifact``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.registry import load_model
from api.settings import Settings
from molprop.artifact.resolve import MODEL_DIR_ENV, shipped_models_dir


def test_model_dir_defaults_to_the_shipped_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    assert Settings().model_dir == shipped_models_dir()
    assert (Settings().model_dir / "solubility" / "config.json").is_file()


def test_model_dir_is_read_from_the_library_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path))
    assert Settings().model_dir == tmp_path


def test_served_model_reports_the_artifact_card_and_metrics() -> None:
    directory = shipped_models_dir() / "solubility"
    served = load_model(directory)
    assert served.card == (directory / "card.md").read_text()
    assert served.test_metrics["rmse"] > 0 and served.test_metrics["n"] > 0
