"""The ``strata`` command: agents, blocks, prompt, tools, messages, archives and search.

    strata [--target HOST:PORT] [--tenant T] [--api-key KEY] [--root-cert PEM [--client-cert PEM
           --client-key PEM]] [--json] GROUP COMMAND [options]

Exit codes: 0 on success, 2 for bad usage or INVALID_ARGUMENT, 1 for any other failure (including
a memory tool that reports ``ok=false``), 130 when interrupted with Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import grpc

from strata.cli import (
    admin,
    agents,
    archival,
    blocks,
    console,
    loadtest,
    mcp,
    memfs,
    messages,
    prompt,
    purge,
    search,
)
from strata.cli.commands import UsageError
from strata.cli.hints import hint
from strata.cli.output import Printer
from strata.client import DEFAULT_TARGET, DEFAULT_TIMEOUT, MemoryClient, StrataClientError
from strata.client.arguments import API_KEY_ENV, TARGET_ENV, tls_credentials

TENANT_ENV = "STRATA_TENANT"

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="strata",
        description="Manage Strata agents' memory through MemoryService.",
        epilog="Exit codes: 0 ok, 2 bad usage or INVALID_ARGUMENT, 1 any other failure.",
    )
    parser.add_argument(
        "--target",
        default=os.environ.get(TARGET_ENV, DEFAULT_TARGET),
        help=f"MemoryService address, or replicas balanced round robin as ipv4:HOST:PORT,HOST:PORT "
        f"(env {TARGET_ENV}; default %(default)s)",
    )
    parser.add_argument(
        "--tenant",
        default=os.environ.get(TENANT_ENV) or None,
        help=f"tenant sent as x-strata-tenant (env {TENANT_ENV}; the server's 'default' if unset)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"API key sent as 'authorization: Bearer …' (env {API_KEY_ENV}); it names the tenant",
    )
    parser.add_argument("--root-cert", help="PEM CA of the server's certificate: connect with TLS")
    parser.add_argument("--client-cert", help="PEM client certificate for mTLS (with --client-key)")
    parser.add_argument("--client-key", help="PEM key of --client-cert")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print results as protobuf JSON with the proto's field names, as grpcurl does "
        "(also accepted after the command)",
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per call (default %(default)s)"
    )
    groups = parser.add_subparsers(dest="group", metavar="GROUP", required=True)
    agents.register(groups)
    blocks.register(groups)
    prompt.register(groups)
    messages.register(groups)
    archival.register(groups)
    purge.register(groups)
    search.register(groups)
    loadtest.register(groups)
    memfs.register(groups)
    mcp.register(groups)
    console.register(groups)
    admin.register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    args = build_parser().parse_args(argv)
    printer = Printer(as_json=args.json)
    credentials = None
    if args.root_cert or args.client_cert or args.client_key:
        try:
            credentials = tls_credentials(args.root_cert, args.client_cert, args.client_key)
        except (ValueError, OSError) as error:  # half a key pair, an unreadable file
            print(f"strata: error: {error}", file=sys.stderr)
            return EXIT_USAGE
    args.credentials = credentials  # for commands that open a client of another service
    try:
        with MemoryClient(
            args.target,
            tenant=args.tenant,
            timeout=args.timeout,
            api_key=args.api_key,
            credentials=credentials,
        ) as client:
            code: int | None = args.run(client, args, printer)
    except StrataClientError as error:
        report(error)
        if said := hint(error.code, args.target, credentials):
            print(said, file=sys.stderr)
        return EXIT_USAGE if error.code == grpc.StatusCode.INVALID_ARGUMENT else EXIT_FAILURE
    except UsageError as error:
        print(f"strata: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("strata: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code or 0


def report(error: StrataClientError) -> None:
    """Status, message and reason on stderr, then the bad fields and the ErrorInfo metadata."""
    reason = f" (reason: {error.reason})" if error.reason else ""
    print(f"strata: {error.code.name}: {error.message}{reason}", file=sys.stderr)
    for violation in error.field_violations:
        print(f"  field {violation.field}: {violation.description}", file=sys.stderr)
    for key, value in sorted(error.metadata.items()):
        print(f"  {key} = {value}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
