"""The key rule (docs/security.md, "Key rule"): every configured key is refused at start-up when it is
a documented placeholder, short, or visibly not random; a generated key passes."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from strata_memory.settings import MemorySettings
from strata_retrieval.settings import RetrievalSettings
from strata_serving.auth import Principal, PrincipalKind, StaticKey
from strata_serving.key_strength import MIN_KEY_BITS, estimated_bits, key_weakness
from tests.security.conftest import ADMIN_KEY, SERVICE_KEY

# What deploy/kubernetes/secrets.yaml shipped before the key rule, and what docs show as placeholders.
PLACEHOLDERS = [
    "replace-me-admin-key",
    "replace-me-service-key",
    "replace-me-qdrant-key",
    "replace-me-admin-key-0123456789abcdef",  # long enough, still the documented placeholder
    "CHANGEME-0123456789abcdefghijklmnop",
    "example-key-0123456789abcdefghijklm",
]
WEAK = [
    "x7Kq9mPz2vLw4nRt",  # 16 random-looking characters: too short
    "a" * 40,  # no randomness at all
    "ab" * 20,  # two characters repeated
    "abcdefghijklmnopqrstuvwxyz",  # a sequence
    "0123456789" * 3,  # a sequence repeated
]


@pytest.mark.parametrize("key", PLACEHOLDERS + WEAK)
def test_placeholder_and_weak_keys_are_refused_by_every_setting(key: str) -> None:
    assert key_weakness(key) is not None
    with pytest.raises(ValidationError, match="STRATA_MEMORY_ADMIN_API_KEY is refused"):
        MemorySettings(admin_api_key=key)
    with pytest.raises(ValidationError, match="STRATA_RETRIEVAL_API_KEY is refused"):
        RetrievalSettings(api_key=key)
    with pytest.raises(ValidationError, match="STRATA_RETRIEVAL_QDRANT_API_KEY is refused"):
        RetrievalSettings(qdrant_api_key=key)
    with pytest.raises(ValueError, match="openssl rand -hex 24"):
        StaticKey(key, Principal(PrincipalKind.ADMIN, key_id="admin"))


def test_a_key_of_exactly_the_minimum_bits_passes() -> None:
    key = "ab0Zb0aZ0Zab" + "Z0ba0aZbb0aZ" + "0bZa" * 4  # 4 characters, 10 each: 40 x 2 bits
    assert estimated_bits(key) == MIN_KEY_BITS
    assert key_weakness(key) is None
    assert key_weakness(key[:-1] + "Z") is not None  # one repeat more: below the minimum


def test_generated_keys_and_the_suites_keys_pass() -> None:
    for _ in range(200):
        assert key_weakness(secrets.token_hex(24)) is None
        assert key_weakness(secrets.token_urlsafe(32)) is None
    for key in (ADMIN_KEY, SERVICE_KEY):
        assert key_weakness(key) is None
    MemorySettings(admin_api_key=secrets.token_hex(24))
    RetrievalSettings(api_key=secrets.token_hex(24), qdrant_api_key=secrets.token_hex(24))


@pytest.mark.parametrize(
    ("command", "variable"),
    [("strata-memory", "STRATA_MEMORY_ADMIN_API_KEY"), ("strata-retrieval", "STRATA_RETRIEVAL_API_KEY")],
)
def test_a_service_started_with_the_shipped_placeholder_exits_naming_the_setting(
    command: str, variable: str
) -> None:
    env = os.environ | {variable: "replace-me-admin-key"}
    executable = Path(sys.executable).parent / command
    done = subprocess.run([executable], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert f"{variable} is refused: it contains the placeholder 'replace-me'" in done.stderr
