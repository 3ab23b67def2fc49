"""Service settings, read from the environment (``MOLPROP_*``) by pydantic-settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_PRETRAINED = Path(__file__).resolve().parents[1] / "pretrained"


class Settings(BaseSettings):
    """Environment: ``MOLPROP_MODEL_DIR``, ``MOLPROP_MAX_BATCH``, ``MOLPROP_API_KEY``,
    ``MOLPROP_MAX_BODY_BYTES``, ``MOLPROP_MAX_SMILES_LENGTH``, ``MOLPROP_INFERENCE_WORKERS``."""

    model_config = SettingsConfigDict(env_prefix="MOLPROP_", protected_namespaces=())

    model_dir: Path = Field(REPO_PRETRAINED, description="directory of model artifacts (one per sub-directory)")
    max_batch: int = Field(1000, ge=1, description="most SMILES per request (more: 413)")
    api_key: SecretStr | None = Field(None, description="if set, /v1/* require a matching X-API-Key")
    max_body_bytes: int = Field(2_000_000, ge=1024, description="request bodies above this: 413")
    max_smiles_length: int = Field(1000, ge=1, description="longer SMILES are per-row invalid_input")
    inference_workers: int = Field(2, ge=1, description="threads running model inference")
