"""``strata mcp --transport http`` as a process, and which Host and Origin headers it accepts."""

from __future__ import annotations

import subprocess

from bench.mcp.sessions import wait_listening
from strata.client import AsyncMemoryClient
from strata.mcp.server import transport_security
from tests.mcp.sessions import STRATA, Tenant, http_session
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
