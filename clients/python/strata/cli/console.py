"""``strata console``: serve the web console (default http://127.0.0.1:8080; see docs/console.md).

    strata console                         auth off: acts as --tenant / STRATA_TENANT, as the CLI does
    strata console --auth                  MemoryService requires API keys: each person signs in with one

Settings come from ``STRATA_CONSOLE_*`` (:mod:`strata.console.settings`); the options here override
them. MemoryService is ``STRATA_CONSOLE_MEMORY_TARGET``, else the global ``--target``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from strata.cli.commands import Subparsers, UsageError, command
from strata.cli.output import Printer
from strata.client import MemoryClient
from strata.console.settings import PREFIX, ConsoleSettings


def register(subparsers: Subparsers) -> None:
    parser = command(subparsers, "console", "serve the web console (open http://127.0.0.1:8080)", _run)
    parser.add_argument(
        "--host", default=None, help="address to bind (STRATA_CONSOLE_HOST; default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=None, help="port (STRATA_CONSOLE_PORT; default 8080)")
    parser.add_argument(
        "--auth",
        action="store_true",
        default=None,
        help="MemoryService requires API keys: sign in with one (STRATA_CONSOLE_AUTH)",
    )


def _run(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> int:
    """Serve until Ctrl-C."""
    from strata.console.server import serve  # Starlette and uvicorn load only for this command

    try:
        settings = ConsoleSettings.from_environment()
    except ValueError as error:
        raise UsageError(str(error)) from None
    overrides: dict[str, object] = {}
    if not os.environ.get(PREFIX + "MEMORY_TARGET"):
        overrides["memory_target"] = args.target
    if args.tenant and not os.environ.get(PREFIX + "TENANT"):
        overrides["tenant"] = args.tenant
    for name in ("host", "port", "auth"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    serve(dataclasses.replace(settings, **overrides))  # type: ignore[arg-type]
    return 0
