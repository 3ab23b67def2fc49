"""Named API keys with roles (``api.keys``): read from a file (lines or JSON) and from the
environment, next to the single ``MOLPROP_API_KEY``; malformed configurations stop the service
with a reason that never quotes a key; a key is matched against every configured key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from api.keys import LOCAL, Caller, authenticate
from api.settings import Settings


def settings(model_dir: Path, **values) -> Settings:
    return Settings(model_dir=model_dir, data_dir=model_dir / "data", job_workers=0, **values)


def callers(config: Settings, *given: str | None) -> list[Caller | None]:
    return [authenticate(config.keys, key) for key in given]


def test_keys_from_a_file_the_environment_and_the_single_key(tmp_path, monkeypatch):
    keys = tmp_path / "keys"
    keys.write_text("# team keys\n\nann:user:ann-secret\n  ops : admin : ops:secret:with:colons \n")
    monkeypatch.setenv("MOLPROP_API_KEYS", "bo:user:bo-secret, cy:admin:cy-secret")
    config = settings(tmp_path, api_keys_file=keys, api_key="single")
    assert callers(config, "ann-secret", "ops:secret:with:colons", "bo-secret", "cy-secret") == [
        Caller("ann", "user"),
        Caller("ops", "admin"),
        Caller("bo", "user"),
        Caller("cy", "admin"),
    ]
    assert callers(config, "single") == [Caller("admin", "admin")]
    assert callers(config, None, "", "ann-secre", "ann-secret ", "nope") == [None] * 5


def test_keys_as_json(tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([{"name": "lab", "role": "user", "key": "k1,with,commas"}]))
    assert callers(settings(tmp_path, api_keys_file=keys), "k1,with,commas") == [
        Caller("lab", "user")
    ]
    assert callers(settings(tmp_path, api_keys='[{"name": "a", "role": "admin", "key": "x"}]'), "x")


def test_no_key_configured_is_the_local_single_user_service(tmp_path, monkeypatch):
    for name in ("MOLPROP_API_KEY", "MOLPROP_API_KEYS", "MOLPROP_API_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    config = settings(tmp_path)
    assert config.keys == ()
    assert callers(config, None, "anything") == [LOCAL, LOCAL]
    assert LOCAL.is_admin and LOCAL.sees("someone") and LOCAL.sees(None)
    assert Caller("ann", "user").sees("ann") and not Caller("ann", "user").sees(None)


@pytest.mark.parametrize(
    "values, says",
    [
        ({"api_keys": "ann:user"}, "MOLPROP_API_KEYS entry 1: expected name:role:key"),
        ({"api_keys": "ann:root:SECRETVALUE"}, "role 'root'; roles: user, admin"),
        ({"api_keys": "ann:user:"}, "key 'ann' is empty"),
        ({"api_keys": "ann:user:tab\tSECRETVALUE"}, "printable ASCII without spaces"),
        ({"api_keys": "../x:user:SECRETVALUE"}, "key name '../x' is not allowed"),
        ({"api_keys": " , \n# nothing"}, "MOLPROP_API_KEYS is set but holds no key"),
        ({"api_keys": "[]"}, "holds no key"),
        ({"api_keys": "[{"}, "not valid JSON"),
        ({"api_keys": '{"a": 1}'}, "expected name:role:key"),
        ({"api_keys": "a:user:SECRETVALUE,a:admin:SECRETVALUE2"}, "two API keys are named 'a'"),
        ({"api_keys": "a:user:SECRETVALUE,b:admin:SECRETVALUE"}, "'a' and 'b' are the same key"),
        ({"api_keys": "admin:user:SECRETVALUE", "api_key": "x"}, "two API keys are named 'admin'"),
        ({"api_keys_file": "/no/such/keys"}, "MOLPROP_API_KEYS_FILE '/no/such/keys' cannot be"),
    ],
)
def test_malformed_keys_stop_the_service_with_the_reason(tmp_path, values, says):
    with pytest.raises(ValidationError) as info:
        settings(tmp_path, **values)
    message = str(info.value)
    assert says in message
    assert "SECRETVALUE" not in message  # a key is never quoted


def test_keys_file_refused_at_start_up(tmp_path, monkeypatch):
    """The process that serves the app stops with the reason (as for MOLPROP_API_KEY)."""
    from api.main import create_app_from_environment

    keys = tmp_path / "keys"
    keys.write_text("ann:user:SECRETVALUE\nbo:superuser:x\n")
    monkeypatch.setenv("MOLPROP_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("MOLPROP_API_KEYS_FILE", str(keys))
    with pytest.raises(SystemExit) as info:
        create_app_from_environment()
    assert "role 'superuser'" in str(info.value) and "SECRETVALUE" not in str(info.value)
