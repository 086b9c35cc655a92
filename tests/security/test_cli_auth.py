"""The ``strata`` CLI with an API key (flag or environment) and TLS flags, against a secured server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest

from strata.cli.main import main
from tests.security.certificates import Pki
from tests.security.conftest import ADMIN_KEY, create_key
from tests.servers import ServicePair


async def run_cli(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run the CLI on a worker thread (its blocking client must not stall the servers' loop)."""

    def call() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    return await asyncio.to_thread(call)


async def test_cli_uses_the_api_key_flag_or_environment(
    stack: ServicePair, channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STRATA_API_KEY", raising=False)
    token = await create_key(channel, "acme")
    target = ["--target", stack.memory_address, "--json"]
    code, _, err = await run_cli([*target, "agents", "list"])
    assert code == 1
    assert "UNAUTHENTICATED" in err
    assert token not in err
    code, out, err = await run_cli([*target, "--api-key", token, "agents", "create", "--name", "cli-bot"])
    assert code == 0, err
    monkeypatch.setenv("STRATA_API_KEY", token)
    code, out, _ = await run_cli([*target, "agents", "list"])
    assert code == 0
    assert "cli-bot" in out
    code, _, err = await run_cli([*target, "--tenant", "globex", "agents", "list"])
    assert code == 1
    assert "PERMISSION_DENIED" in err


async def test_cli_reports_unusable_tls_files_as_usage_errors(tmp_path: Path, pki: Pki) -> None:
    code, _, err = await run_cli(["--root-cert", str(tmp_path / "missing.pem"), "agents", "list"])
    assert code == 2
    assert "missing.pem" in err
    code, _, err = await run_cli(
        ["--root-cert", str(pki.ca_cert), "--client-cert", str(pki.client_cert), "agents", "list"]
    )
    assert code == 2
    assert "key" in err


async def test_cli_admin_commands_mint_list_and_revoke_keys(stack: ServicePair) -> None:
    target = ["--target", stack.memory_address]
    admin = [*target, "--api-key", ADMIN_KEY]
    code, out, err = await run_cli(
        [*admin, "--json", "admin", "create-key", "--tenant", "acme", "--name", "ops"]
    )
    assert code == 0, err
    created = json.loads(out)
    token, key_id = created["secret"], created["api_key"]["key_id"]
    code, out, _ = await run_cli([*target, "--api-key", token, "agents", "list"])
    assert code == 0
    code, out, _ = await run_cli([*admin, "admin", "list-keys", "--tenant", "acme"])
    assert code == 0
    assert key_id in out
    assert token not in out
    code, _, err = await run_cli([*target, "--api-key", token, "admin", "list-keys"])
    assert code == 1
    assert "PERMISSION_DENIED" in err
    code, out, _ = await run_cli([*admin, "admin", "revoke-key", key_id])
    assert code == 0
    assert f"revoked {key_id}" in out
    code, _, err = await run_cli([*target, "--api-key", token, "agents", "list"])
    assert code == 1
    assert "UNAUTHENTICATED" in err
