"""Per-call cost of the MCP hop: one memory tool call through ``strata mcp`` against the same call
made directly over gRPC, measured side by side.

MemoryService (API keys on, SQLite) and RetrievalService run in this process on a background event
loop; the MCP servers are real ``strata mcp`` processes (stdio, and streamable HTTP on a free port);
the clients are the gRPC client and the MCP SDK's own client, in this process. Each round times
``--calls`` sequential calls on every path in turn (paths interleaved, so drift hits them alike):

- ``grpc``: ``ExecuteTool`` through :class:`strata.client.AsyncMemoryClient`;
- ``mcp_stdio``: ``tools/call`` to ``strata mcp --agent A`` over its stdin/stdout;
- ``mcp_http``: ``tools/call`` over streamable HTTP with the key as bearer (the server checks the
  key once per 10 s with MemoryService, so most calls carry no extra check).

Two calls: ``memory_rethink`` (a write: the block's whole value, a new version each call) and
``read_memory`` / ``RenderMemory`` (a read). Figures: per-path p50/p90/p99/mean in ms over all
rounds, and the MCP overhead (p50 of the path minus p50 of gRPC).

    .venv/bin/python -m bench.mcp.overhead            # writes bench/results/mcp_overhead.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession

from bench.mcp.sessions import free_port, http_session, stdio_session, wait_listening
from bench.perf.host import cpu_ticks, steal_percent
from bench.servers import BackgroundPair, ServicePair
from strata.client import AdminClient, AsyncMemoryClient

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "mcp_overhead.json"
STRATA = str(Path(sys.executable).parent / "strata")
ADMIN_KEY = secrets.token_hex(24)
"""A fresh admin key for this run (MemoryService refuses guessable ones)."""
Call = Callable[[int], Awaitable[None]]


def services(root: Path) -> BackgroundPair:
    """Both services (API keys on) on a background event loop, so the measured clients have this
    loop to themselves."""
    memory = {"auth_enabled": True, "admin_api_key": ADMIN_KEY, "log_json": False}
    return BackgroundPair(ServicePair(root, memory_settings=memory, quick_retries=False))


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3)

    return {
        "p50_ms": pct(0.5),
        "p90_ms": pct(0.9),
        "p99_ms": pct(0.99),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }


async def timed(call: Call, calls: int, offset: int) -> list[float]:
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        await call(offset + i)
        samples.append(time.perf_counter() - start)
    return samples


def build_paths(
    grpc_client: AsyncMemoryClient, stdio: ClientSession, http: ClientSession, agent: str
) -> dict[str, dict[str, Call]]:
    """Per operation (write, read), the same call on each path."""

    async def grpc_write(i: int) -> None:
        arguments = {"label": "scratch", "new_memory": f"note {i}"}
        result = await grpc_client.execute_tool(
            agent_id=agent, tool_name="memory_rethink", arguments=arguments
        )
        assert result.ok, result.text

    async def stdio_write(i: int) -> None:
        result = await stdio.call_tool("memory_rethink", {"label": "scratch", "new_memory": f"note {i}"})
        assert not result.is_error, result.content

    async def http_write(i: int) -> None:
        arguments = {"agent_id": agent, "label": "scratch", "new_memory": f"note {i}"}
        result = await http.call_tool("memory_rethink", arguments)
        assert not result.is_error, result.content

    async def grpc_read(i: int) -> None:
        await grpc_client.render_memory(agent_id=agent)

    async def stdio_read(i: int) -> None:
        assert not (await stdio.call_tool("read_memory", {})).is_error

    async def http_read(i: int) -> None:
        assert not (await http.call_tool("read_memory", {"agent_id": agent})).is_error

    return {
        "write": {"grpc": grpc_write, "mcp_stdio": stdio_write, "mcp_http": http_write},
        "read": {"grpc": grpc_read, "mcp_stdio": stdio_read, "mcp_http": http_read},
    }


async def measure(
    target: str, key: str, agent: str, http_url: str, *, rounds: int, calls: int
) -> dict[str, dict[str, list[float]]]:
    """Every path, ``rounds`` x ``calls`` sequential calls each, interleaved; per-call seconds kept."""
    async with (
        AsyncMemoryClient(target, api_key=key, timeout=30) as grpc_client,
        stdio_session(STRATA, target, key, agent) as stdio,
        http_session(http_url, key) as http,
    ):
        paths = build_paths(grpc_client, stdio, http, agent)
        for by_path in paths.values():  # warm-up: connections, caches, first-call imports
            for call in by_path.values():
                await timed(call, max(10, calls // 10), 0)
        samples: dict[str, dict[str, list[float]]] = {op: {p: [] for p in paths[op]} for op in paths}
        for round_number in range(rounds):
            for op, by_path in paths.items():
                for path, call in by_path.items():
                    samples[op][path] += await timed(call, calls, round_number * calls)
    return samples


def report(samples: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op, by_path in samples.items():
        figures = {path: summary(values) for path, values in by_path.items()}
        base = figures["grpc"]["p50_ms"]
        for path in ("mcp_stdio", "mcp_http"):
            figures[path]["overhead_p50_ms"] = round(figures[path]["p50_ms"] - base, 3)
            figures[path]["ratio_p50"] = round(figures[path]["p50_ms"] / base, 2)
        out[op] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="sequential calls per path per round")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strata-mcp-bench-") as folder:
        servers = services(Path(folder))
        http_server: subprocess.Popen[bytes] | None = None
        try:
            target = servers.start()
            with AdminClient(target, api_key=ADMIN_KEY, timeout=30) as admin:
                key = admin.create_api_key(tenant_id="bench").secret
            agent = asyncio.run(_agent(target, key))
            http_server, url = _start_http(target)
            load_before = os.getloadavg()[0]
            before = cpu_ticks()
            started = time.perf_counter()
            samples = asyncio.run(measure(target, key, agent, url, rounds=args.rounds, calls=args.calls))
            elapsed = time.perf_counter() - started
            steal = steal_percent(before, cpu_ticks())
        finally:
            if http_server is not None:
                http_server.terminate()
                http_server.wait(timeout=30)
            servers.stop()
    result = {
        "benchmark": "bench.mcp.overhead",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "seconds": round(elapsed, 1),
        "host_steal_percent": round(steal, 2),
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
        "sdk": {"mcp": _version("mcp"), "anthropic": _version("anthropic")},
        "results": report(samples),
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["results"], indent=2))


async def _agent(target: str, key: str) -> str:
    async with AsyncMemoryClient(target, api_key=key, timeout=30) as client:
        return (await client.create_agent()).id


def _start_http(target: str) -> tuple[subprocess.Popen[bytes], str]:
    """``strata mcp --transport http`` as its own process on a free loopback port."""
    port = free_port()
    command = [STRATA, "--target", target, "mcp", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command)
    wait_listening(port, process)
    return process, f"http://127.0.0.1:{port}/mcp"


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
