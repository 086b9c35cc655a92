"""The PostgreSQL variants are skipped, naming the variable, when no server is configured — except in CI."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.store_backends import POSTGRES_URL_ENV, postgres_server_url


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A PostgreSQL URL on a port bound but not listening: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"postgresql+psycopg://postgres@127.0.0.1:{sock.getsockname()[1]}/test"


def test_without_the_variable_the_variant_is_skipped_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=POSTGRES_URL_ENV):
        postgres_server_url()


def test_an_unreachable_server_is_skipped_outside_ci(
    monkeypatch: pytest.MonkeyPatch, refused_url: str
) -> None:
    monkeypatch.setenv(POSTGRES_URL_ENV, refused_url)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="unreachable"):
        postgres_server_url()


@pytest.mark.parametrize("configured", [False, True], ids=["unset", "unreachable"])
def test_in_ci_a_missing_server_fails(
    monkeypatch: pytest.MonkeyPatch, refused_url: str, configured: bool
) -> None:
    monkeypatch.setenv("CI", "true")
    if configured:
        monkeypatch.setenv(POSTGRES_URL_ENV, refused_url)
    else:
        monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match=POSTGRES_URL_ENV):
        postgres_server_url()
