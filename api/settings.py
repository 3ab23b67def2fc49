"""Service settings, read from the environment (``MOLPROP_*``) by pydantic-settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from api.keys import SINGLE_KEY_NAME, ApiKey, check_unique, key_digest, parse_keys
from molprop.artifact.resolve import MODEL_DIR_ENV, shipped_models_dir
from molprop.jobstore.db import data_dir, database_url

#: prefix of every setting's environment variable; ``model_dir`` is read from ``MODEL_DIR_ENV``
ENV_PREFIX = "MOLPROP_"

#: bytes a request needs besides its SMILES (JSON keys, model name, brackets)
_BODY_OVERHEAD = 1024


class Settings(BaseSettings):
    """Environment variables (``MOLPROP_<FIELD>``; defaults in brackets):

    - ``MOLPROP_MODEL_DIR`` [the models shipped with molprop,
      ``molprop.artifact.shipped_models_dir()``]: model artifacts, one per sub-directory; the
      service serves only this directory (the library's own variable, see
      ``molprop.artifact.resolve``).
    - ``MOLPROP_API_KEY`` [unset]: if set, ``/v1/*`` need a matching ``X-API-Key`` header. Set
      but empty, whitespace-only, or with leading/trailing whitespace (which no HTTP header can
      carry): the service refuses to start; unset the variable to serve without a key. It is
      one admin key named ``admin`` (see ``api.keys``).
    - ``MOLPROP_API_KEYS_FILE`` [unset]: a file of named keys with roles, one ``name:role:key``
      per line (role ``user`` or ``admin``; ``#`` comments) or a JSON list of
      ``{"name", "role", "key"}`` (``api.keys``). A user key sees only its own jobs;
      publishing and deleting models needs an admin key.
    - ``MOLPROP_API_KEYS`` [unset]: more such keys, ``name:role:key`` entries separated by
      commas or newlines (or the JSON list). No key at all (none of the three set): the local
      single-user service, everything allowed. A malformed entry, a missing file, two keys with
      one name or one key under two names: the service refuses to start.
    - ``MOLPROP_MAX_BATCH`` [1000]: most SMILES per request (more: 413).
    - ``MOLPROP_MAX_EXPLAIN_BATCH`` [16]: most SMILES per ``/v1/explain`` request (more: 413;
      an explanation costs ~50x a prediction, see ``api.explain``).
    - ``MOLPROP_MAX_BODY_BYTES`` [2000000]: larger request bodies: 413. Must hold one SMILES of
      ``MOLPROP_MAX_SMILES_LENGTH`` characters (checked at start-up).
    - ``MOLPROP_MAX_SMILES_LENGTH`` [1000]: longer SMILES are per-row ``invalid_input``; it also
      replaces the library's own limit, so raising it admits longer SMILES.
    - ``MOLPROP_MAX_HEAVY_ATOMS`` [200]: molecules with more heavy atoms are per-row
      ``invalid_input`` (attention cost grows with the square of a molecule's tokens).
    - ``MOLPROP_MAX_REQUEST_TOKENS`` [64000]: most work in one request, in attention tokens
      summed over its molecules (ESA: 2 per bond and 1 per atom without a bond, NSA: 1 per
      heavy atom; counted by a cheap RDKit parse); a 3D model's conformers count 20 tokens per
      atom embedded (``api.budget``); more: 413 (send a job instead). Bounds the work of one
      request (``benchmarks/service_budget.py``).
    - ``MOLPROP_SMALL_REQUEST_TOKENS`` [2000]: requests of at most this much work (same count)
      run on a worker of their own, so a short request never waits behind large ones.
    - ``MOLPROP_INFERENCE_WORKERS`` [2]: threads running the larger requests.
    - ``MOLPROP_MAX_QUEUE`` [16]: requests that may wait for a worker, per lane (small / large);
      beyond that: 503 with ``Retry-After``.
    - ``MOLPROP_REQUEST_TIMEOUT_S`` [30]: deadline of a request from its arrival (queueing
      included); past it the work stops (between batches) and the answer is 504. A client that
      disconnects has its work stopped the same way.

    Jobs (``/v1/jobs``, see ``api.jobs``):

    - ``MOLPROP_DATA_DIR`` [``~/.local/share/molprop``]: the SQLite job database
      (``jobs.sqlite``) and the models fine-tune jobs made, unless ``MOLPROP_DATABASE_URL``.
    - ``MOLPROP_DATABASE_URL`` [unset: SQLite under the data directory]: the job database,
      ``postgresql://user:password@host:5432/db`` (psycopg 3) for several API / worker
      processes on several machines.
    - ``MOLPROP_MAX_JOB_ROWS`` [1000000]: most input rows per job (more: 413).
    - ``MOLPROP_MAX_JOB_BODY_BYTES`` [200000000]: largest ``POST /v1/jobs`` body (more: 413).
    - ``MOLPROP_MAX_JOB_JSON_BYTES`` [10000000]: largest JSON ``POST /v1/jobs`` body (more:
      413 saying to upload a file): a JSON body is parsed whole, in memory (~200,000
      drug-like SMILES fit); a file upload is read in chunks.
    - ``MOLPROP_JOB_CHUNK_ROWS`` [4096]: rows predicted and committed at a time (a killed
      worker loses at most one chunk of work; a cancel takes effect between batches).
    - ``MOLPROP_JOB_WORKERS`` [1]: ``molprop worker`` processes the service starts next to
      itself (0: none; run ``molprop worker`` yourself, on any machine sharing the database).
    - ``MOLPROP_JOB_LEASE_S`` [30]: lease of those workers (a killed worker's job is taken over
      this long after its last heartbeat).
    - ``MOLPROP_JOB_WORKER_BACKOFF_S`` [1]: wait before restarting a worker that died; doubled
      on each death within a minute of its start, up to 60 s (``api.workers``).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, protected_namespaces=())

    model_dir: Path = Field(
        default_factory=shipped_models_dir,
        description=f"directory of model artifacts, one per sub-directory (${MODEL_DIR_ENV})",
    )
    max_batch: int = Field(1000, ge=1, description="most SMILES per request (more: 413)")
    max_explain_batch: int = Field(
        16, ge=1, description="most SMILES per /v1/explain request (more: 413)"
    )
    api_key: SecretStr | None = Field(
        None, description="if set, /v1/* require a matching X-API-Key"
    )
    api_keys: SecretStr | None = Field(
        None, description="named keys with roles: name:role:key entries (or a JSON list)"
    )
    api_keys_file: Path | None = Field(
        None, description="a file of name:role:key lines (or a JSON list)"
    )
    max_body_bytes: int = Field(2_000_000, ge=1024, description="request bodies above this: 413")
    max_smiles_length: int = Field(
        1000, ge=1, description="longer SMILES are per-row invalid_input"
    )
    max_heavy_atoms: int = Field(
        200, ge=1, description="larger molecules are per-row invalid_input"
    )
    max_request_tokens: int = Field(
        64_000, ge=1, description="most attention tokens per request (more: 413)"
    )
    small_request_tokens: int = Field(
        2000, ge=1, description="requests up to this many tokens have their own worker"
    )
    inference_workers: int = Field(2, ge=1, description="threads running the larger requests")
    max_queue: int = Field(
        16, ge=0, description="requests waiting for a worker, per lane (more: 503)"
    )
    request_timeout_s: float = Field(
        30.0, gt=0, description="deadline from arrival (then 504, work stopped)"
    )

    data_dir: Path = Field(
        default_factory=data_dir,
        description="job database (SQLite) and fine-tuned models ($MOLPROP_DATA_DIR)",
    )
    database_url: SecretStr | None = Field(
        None, description="SQLAlchemy URL of the job database (default: SQLite in data_dir)"
    )
    max_job_rows: int = Field(1_000_000, ge=1, description="most input rows per job (more: 413)")
    max_job_body_bytes: int = Field(
        200_000_000, ge=1024, description="largest POST /v1/jobs body (more: 413)"
    )
    max_job_json_bytes: int = Field(
        10_000_000, ge=1024, description="largest JSON POST /v1/jobs body (more: 413)"
    )
    job_chunk_rows: int = Field(4096, ge=1, description="rows predicted and committed at a time")
    job_workers: int = Field(1, ge=0, description="molprop worker processes started with the API")
    job_lease_s: float = Field(30.0, gt=0, description="lease of those workers, seconds")
    job_worker_backoff_s: float = Field(
        1.0, gt=0, le=60, description="first wait before restarting a dead worker (doubles)"
    )

    _keys: tuple[ApiKey, ...] = PrivateAttr(())

    @property
    def keys(self) -> tuple[ApiKey, ...]:
        """Every configured API key (empty: the local single-user service)."""
        return self._keys

    @model_validator(mode="after")
    def _read_keys(self) -> Settings:
        keys: list[ApiKey] = []
        if self.api_key is not None:
            keys.append(
                ApiKey(SINGLE_KEY_NAME, "admin", key_digest(self.api_key.get_secret_value()))
            )
        if self.api_keys_file is not None:
            try:
                text = self.api_keys_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(
                    f"MOLPROP_API_KEYS_FILE {str(self.api_keys_file)!r} cannot be read: "
                    f"{type(exc).__name__}"
                ) from None
            keys += parse_keys(text, "MOLPROP_API_KEYS_FILE")
        if self.api_keys is not None:
            keys += parse_keys(self.api_keys.get_secret_value(), "MOLPROP_API_KEYS")
        self._keys = tuple(check_unique(keys))
        return self

    @property
    def job_database_url(self) -> str:
        """The job database: ``MOLPROP_DATABASE_URL``, else SQLite under ``data_dir``."""
        url = None if self.database_url is None else self.database_url.get_secret_value()
        return database_url(url or None, self.data_dir)

    @field_validator("api_key")
    @classmethod
    def _usable_key(cls, key: SecretStr | None) -> SecretStr | None:
        if key is None:
            return None
        value = key.get_secret_value()
        if not value.strip():
            raise ValueError(
                "MOLPROP_API_KEY is set but empty (or only whitespace); an empty key "
                "does not turn authentication off: set a key, or unset "
                "MOLPROP_API_KEY to serve without one"
            )
        if value != value.strip():
            raise ValueError(
                "MOLPROP_API_KEY starts or ends with whitespace, which an X-API-Key "
                "header cannot carry (HTTP strips it): remove the whitespace"
            )
        return key

    @model_validator(mode="after")
    def _body_holds_a_smiles(self) -> Settings:
        need = self.max_smiles_length + _BODY_OVERHEAD
        if self.max_body_bytes < need:
            raise ValueError(
                f"MOLPROP_MAX_BODY_BYTES={self.max_body_bytes} cannot carry one SMILES "
                f"of MOLPROP_MAX_SMILES_LENGTH={self.max_smiles_length} characters: "
                f"set MOLPROP_MAX_BODY_BYTES to at least {need}"
            )
        return self
