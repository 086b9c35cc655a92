"""``strata mcp --transport http`` as a process, and which Host and Origin headers it accepts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.mcp.sessions import wait_listening
from strata.client import AsyncMemoryClient
from strata.mcp.server import transport_security
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from tests.mcp.sessions import STRATA, LoopRunner, Tenant, http_session
from tests.memory_process import free_port


def start_http_server(target: str) -> tuple[subprocess.Popen[bytes], int]:
    """``strata --target T mcp --transport http`` on a free port, once it listens."""
    port = free_port()
    command = [STRATA, "--target", target, "mcp", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    try:
        wait_listening(port, process)
    except BaseException:
        process.kill()
        process.wait(timeout=30)
        raise
    return process, port


async def test_the_http_server_started_from_the_command_line_serves_the_tools(
    memory_target: str, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    process, port = start_http_server(memory_target)
    try:
        async with http_session(f"http://127.0.0.1:{port}/mcp", tenant.key) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert names == [tool.name for tool in (await grpc_client.list_tools()).tools] + [
        "read_memory",
        "list_agents",
    ]
    assert b"Traceback" not in stderr


def test_loopback_names_are_accepted_and_others_only_when_allowed() -> None:
    default = transport_security("127.0.0.1", 8765, [])
    assert default.enable_dns_rebinding_protection
    assert default.allowed_hosts == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert default.allowed_origins == ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]

    remote = transport_security("10.0.0.5", 8765, ["mcp.example.com", "https://agents.example.com"])
    assert remote.allowed_hosts[-2:] == ["10.0.0.5:8765", "mcp.example.com"]
    assert remote.allowed_origins[-1] == "https://agents.example.com"
    assert "https://agents.example.com" not in remote.allowed_hosts
    assert "mcp.example.com" not in remote.allowed_origins


@pytest.fixture
def keyless_memory_target(server_loop: LoopRunner, retrieval_target: str, tmp_path: Path) -> Iterator[str]:
    """A MemoryService without API keys (every call acts as the tenant it names)."""
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=f"sqlite:///{tmp_path}/memory.sqlite3",
        retrieval_address=retrieval_target,
        log_json=False,
    )
    server = server_loop.run(start_memory_server(settings))
    yield server.address
    server_loop.run(server.stop(0))


def test_http_refuses_to_serve_a_memory_service_that_checks_no_keys(keyless_memory_target: str) -> None:
    command = [
        STRATA,
        "--target",
        keyless_memory_target,
        "mcp",
        "--transport",
        "http",
        "--port",
        str(free_port()),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "accepted a made-up API key" in done.stderr
    assert "every caller would share one tenant" in done.stderr


def test_the_cli_works_without_the_mcp_and_anthropic_sdks() -> None:
    """A client installed without the ``mcp`` extra keeps every other command; ``strata mcp`` is listed."""
    script = (
        "import sys\n"
        "for name in ('mcp', 'mcp_types', 'uvicorn', 'starlette', 'anthropic'):\n"
        "    sys.modules[name] = None  # importing it now raises ImportError\n"
        "from strata.cli.main import main\n"
        "main(['--help'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "mcp" in done.stdout
