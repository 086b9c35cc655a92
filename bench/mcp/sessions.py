"""MCP client sessions for the benchmark (the MCP SDK's own client), and waiting for a port."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def stdio_session(strata: str, target: str, key: str, agent: str) -> AsyncIterator[ClientSession]:
    """``strata --target T mcp --agent A`` spawned with ``STRATA_API_KEY=key``; an initialized session."""
    env = {
        "STRATA_API_KEY": key,
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    parameters = StdioServerParameters(
        command=strata, args=["--target", target, "mcp", "--agent", agent], env=env
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, key: str) -> AsyncIterator[ClientSession]:
    """A streamable-HTTP session sending ``Authorization: Bearer key``."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], within: float = 60) -> None:
    """Return once something accepts connections on loopback ``port``; fail if ``process`` exits first."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening on {port}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {within:.0f} s")
