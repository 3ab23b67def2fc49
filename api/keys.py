"""Named API keys with roles, and who is calling.

Keys come from ``MOLPROP_API_KEYS_FILE`` (a file), ``MOLPROP_API_KEYS`` (the environment) and
the single ``MOLPROP_API_KEY`` (one admin key named ``admin``). Both lists take entries
``name:role:key`` (one per line; in the variable also separated by commas) or a JSON list of
``{"name": ..., "role": ..., "key": ...}``; blank lines and lines starting with ``#`` are
skipped. Roles:

- ``user``: predicts, explains, reads models; submits predict jobs and sees, reads and cancels
  only the jobs it submitted (another key's job answers 404, like a job that does not exist).
- ``admin``: everything a user may, plus every job, publishing models (fine-tune jobs) and
  deleting published models.

No key configured at all: the local single-user service, every caller may do everything.

A key is compared with every configured key through ``secrets.compare_digest`` on SHA-256
digests (same length whatever the key), without stopping at the first match, so the time an
answer takes says nothing about the keys.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "admin"]
ROLES: tuple[Role, ...] = ("user", "admin")
#: the name the single ``MOLPROP_API_KEY`` is known by (the owner of the jobs it submits)
SINGLE_KEY_NAME = "admin"
#: a key's name: stored as the owner of its jobs
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: what a key may contain: printable ASCII without spaces (an HTTP header carries it as is)
KEY_VALUE = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class ApiKey:
    """One configured key; ``digest`` is the SHA-256 of the key (the key itself is not kept)."""

    name: str
    role: Role
    digest: bytes

    def __repr__(self) -> str:  # never the digest
        return f"ApiKey(name={self.name!r}, role={self.role!r})"


@dataclass(frozen=True)
class Caller:
    """Who sent a request: ``name`` is None for the local single-user service (no keys)."""

    name: str | None
    role: Role

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def owner(self) -> str | None:
        """What a job this caller submits records as its owner."""
        return self.name

    def sees(self, owner: str | None) -> bool:
        """May this caller see a job owned by ``owner``? Admins (and the keyless local
        service) see every job; a user only its own."""
        return self.is_admin or owner == self.name


#: the caller when no key is configured
LOCAL = Caller(name=None, role="admin")


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _entry(name: object, role: object, key: object, where: str) -> ApiKey:
    if not isinstance(name, str) or not KEY_NAME.fullmatch(name):
        raise ValueError(
            f"{where}: key name {str(name)[:70]!r} is not allowed: letters, digits, '_', '.', "
            "'-', starting with a letter or digit, at most 64 characters"
        )
    if role not in ROLES:
        raise ValueError(f"{where}: key {name!r} has role {str(role)[:20]!r}; roles: user, admin")
    if not isinstance(key, str) or not KEY_VALUE.fullmatch(key):
        raise ValueError(
            f"{where}: key {name!r} is empty or has characters other than printable ASCII "
            "without spaces (which an X-API-Key header cannot carry as they are)"
        )
    return ApiKey(name=name, role=role, digest=key_digest(key))


def parse_keys(text: str, source: str) -> list[ApiKey]:
    """The keys in ``text`` (see the module docstring); ``source`` names it in errors, which
    never quote a key. A malformed entry raises ``ValueError`` with the reason."""
    stripped = text.strip()
    keys = []
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError(f"{source}: JSON must be a list of {{name, role, key}} objects")
        for n, item in enumerate(items):
            where = f"{source} entry {n + 1}"
            keys.append(_entry(item.get("name"), item.get("role"), item.get("key"), where))
    else:
        for n, line in enumerate(re.split(r"[\n,]", text)):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [part.strip() for part in line.split(":", 2)]
            if len(parts) != 3:
                raise ValueError(f"{source} entry {n + 1}: expected name:role:key")
            name, role, key = parts
            keys.append(_entry(name, role, key, f"{source} entry {n + 1}"))
    if not keys:
        raise ValueError(
            f"{source} is set but holds no key; no key does not turn authentication off: "
            "add keys, or unset it to serve without keys"
        )
    return keys


def check_unique(keys: list[ApiKey]) -> list[ApiKey]:
    """``keys`` unless two share a name or a key (``ValueError`` naming them)."""
    names: set[str] = set()
    digests: dict[bytes, str] = {}
    for key in keys:
        if key.name in names:
            raise ValueError(f"two API keys are named {key.name!r}: names must be unique")
        if key.digest in digests:
            raise ValueError(f"API keys {digests[key.digest]!r} and {key.name!r} are the same key")
        names.add(key.name)
        digests[key.digest] = key.name
    return keys


def authenticate(keys: tuple[ApiKey, ...], given: str | None) -> Caller | None:
    """The caller ``given`` identifies among ``keys`` (None: no match, or no key given);
    :data:`LOCAL` when no key is configured. Every key is compared, in constant time."""
    if not keys:
        return LOCAL
    digest = key_digest(given or "")
    found = None
    for key in keys:
        if secrets.compare_digest(digest, key.digest) and given:
            found = key
    return None if found is None else Caller(name=found.name, role=found.role)


__all__ = [
    "LOCAL",
    "ROLES",
    "SINGLE_KEY_NAME",
    "ApiKey",
    "Caller",
    "Role",
    "authenticate",
    "check_unique",
    "key_digest",
    "parse_keys",
]
