"""The MCP Inspector's command-line mode (npm ``@modelcontextprotocol/inspector``, pinned in
tests/mcp/inspector/package-lock.json, installed by ``make mcp-inspector``) lists Strata's tools and
calls one, over stdio (spawning ``strata mcp``) and over streamable HTTP with a bearer key."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from strata.client import AsyncMemoryClient
from tests.mcp.sessions import STRATA, HttpServer, Tenant

INSPECTOR = Path(__file__).parent / "inspector" / "node_modules" / ".bin" / "mcp-inspector"


def inspector(tmp_path: Path, *args: str) -> Any:
    """Run ``mcp-inspector --cli ARGS``; its JSON output (the call must succeed)."""
    assert INSPECTOR.exists(), (
        f"{INSPECTOR} is missing: run 'make mcp-inspector' (npm ci in tests/mcp/inspector)"
    )
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json"), "NO_COLOR": "1"}
    done = subprocess.run(
        [str(INSPECTOR), "--cli", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_the_inspector_lists_and_calls_tools_over_stdio(
    tmp_path: Path, memory_target: str, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    server = ["-e", f"STRATA_API_KEY={tenant.key}", "--", STRATA, "--target", memory_target]
    server += ["mcp", "--agent", tenant.agent_id]
    listed = inspector(tmp_path, *server[:2], "--method", "tools/list", *server[2:])
    served = [tool.name for tool in (await grpc_client.list_tools()).tools]
    assert [tool["name"] for tool in listed["tools"]] == [*served, "read_memory"]

    called = inspector(
        tmp_path,
        *server[:2],
        "--method",
        "tools/call",
        "--tool-name",
        "core_memory_append",
        "--tool-arg",
        "label=human",
        "--tool-arg",
        "content=Met through the inspector.",
        *server[2:],
    )
    assert called["isError"] is False
    assert (
        await grpc_client.get_block(agent_id=tenant.agent_id, label="human")
    ).value == "Met through the inspector."


async def test_the_inspector_lists_and_calls_tools_over_http(
    tmp_path: Path, mcp_http: HttpServer, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    http = [mcp_http.url, "--transport", "http", "--header", f"Authorization: Bearer {tenant.key}"]
    listed = inspector(tmp_path, *http, "--method", "tools/list")
    served = [tool.name for tool in (await grpc_client.list_tools()).tools]
    assert [tool["name"] for tool in listed["tools"]] == [*served, "read_memory", "list_agents"]

    called = inspector(
        tmp_path,
        *http,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_rethink",
        "--tool-arg",
        f"agent_id={tenant.agent_id}",
        "--tool-arg",
        "label=persona",
        "--tool-arg",
        "new_memory=Terse.",
    )
    assert called["isError"] is False
    assert (await grpc_client.get_block(agent_id=tenant.agent_id, label="persona")).value == "Terse."
