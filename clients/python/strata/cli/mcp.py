"""``strata mcp``: serve Strata's memory tools and resources to MCP hosts (see docs/agents.md).

    strata mcp --agent agent-…                          stdio, for Claude Desktop / Claude Code
    strata mcp --transport http --port 8765             streamable HTTP at http://127.0.0.1:8765/mcp

Over stdio the API key is the global ``--api-key`` or ``STRATA_API_KEY``; over HTTP every request
brings its caller's key as ``Authorization: Bearer``. Logs go to stderr (stdout carries the protocol).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from strata.cli.commands import Subparsers, command
from strata.cli.output import Printer
from strata.client import MemoryClient
from strata.client.arguments import API_KEY_ENV
from strata.mcp.options import MAX_REQUEST_BYTES, McpOptions

DEFAULT_PORT = 8765
EXIT_REFUSED = 1


def register(subparsers: Subparsers) -> None:
    parser = command(subparsers, "mcp", "serve the memory tools and resources to MCP hosts", _run)
    parser.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable HTTP"
    )
    parser.add_argument(
        "--agent", default="", help="the one agent every call uses (default: each call names agent_id)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP: port (default %(default)s)")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="HTTP: also accept this Origin (scheme://host[:port]) or Host header (host[:port]); "
        "repeatable. Loopback names are always accepted; another Origin gets 403, another Host 421",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=MAX_REQUEST_BYTES,
        help="HTTP: larger request bodies are refused with 413 (default %(default)s, MemoryService's limit)",
    )


def _run(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> int:
    """Serve until the host disconnects (stdio) or Ctrl-C (HTTP); exit 1 if HTTP would serve a
    MemoryService that checks no keys."""
    from strata.mcp.server import KeysNotChecked, serve_http, serve_stdio

    options = McpOptions(
        target=args.target,
        agent=args.agent,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        tenant=args.tenant,
        timeout=args.timeout,
    )
    if args.transport == "stdio":
        asyncio.run(serve_stdio(options))
        return 0
    try:
        asyncio.run(
            serve_http(
                options,
                host=args.host,
                port=args.port,
                allowed_origins=args.allow_origin,
                max_request_bytes=args.max_request_bytes,
            )
        )
    except KeysNotChecked as refused:
        print(f"strata: error: {refused}", file=sys.stderr)
        return EXIT_REFUSED
    return 0
