"""``strata loadtest CALL``: load-test one unary RPC of either service (loopback only), ghz-style.

    strata loadtest grpc.health.v1.Health/Check -c 8 -z 5 --warmup 1
    strata --target 127.0.0.1:50052 loadtest strata.retrieval.v1.RetrievalService/Stats \\
        -d '{"filter": {"tenant_id": "default"}}' -n 2000 -c 4 --processes 2 -o stats.json
    STRATA_API_KEY=... strata loadtest strata.retrieval.v1.RetrievalService/Stats --address 127.0.0.1:50052 \\
        --cacert ca.pem --cert client.pem --key client.key -H x-request-id:load -n 1000 -o calls.csv
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from strata.cli.commands import Subparsers, UsageError, command
from strata.cli.output import Printer
from strata.client import MemoryClient
from strata.client.arguments import API_KEY_ENV
from strata.loadtest import LoadSpec, LoadTestError, TlsSpec, run_load


def register(subparsers: Subparsers) -> None:
    parser = command(subparsers, "loadtest", "load-test one RPC of either service (loopback only)", _run)
    parser.add_argument(
        "call", metavar="CALL", help="package.Service/Method, e.g. grpc.health.v1.Health/Check"
    )
    parser.add_argument("--address", help="HOST:PORT to load (default: the global --target)")
    requests = parser.add_mutually_exclusive_group()
    requests.add_argument("-d", "--data", default="{}", help="the request as protobuf JSON (default {})")
    requests.add_argument("--data-file", help="read the request JSON from a file")
    requests.add_argument("--factory", help="module:attribute making each request (see strata.loadtest)")
    parser.add_argument("--params", default="{}", help="JSON object passed to --factory")
    parser.add_argument("-c", "--concurrency", type=int, default=1, help="calls in flight (default 1)")
    parser.add_argument("--rate", type=float, help="start this many calls per second (default: closed loop)")
    parser.add_argument("-z", "--duration", type=float, help="seconds to measure")
    parser.add_argument("-n", "--requests", type=int, help="calls to measure")
    parser.add_argument("--warmup", type=float, default=0.0, help="seconds of unmeasured calls first")
    parser.add_argument("--warmup-requests", type=int, default=0, help="unmeasured calls first")
    parser.add_argument("--processes", type=int, default=1, help="client processes (default 1)")
    parser.add_argument("--call-timeout", type=float, default=20.0, help="deadline per call, seconds")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="hard stop, seconds (default 600)")
    parser.add_argument(
        "-o",
        "--output",
        help="also write the report to this file: CSV (one row per call) if it ends in .csv, else JSON",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        help="what to print (default text; json with the global --json)",
    )
    parser.add_argument(
        "--api-key",
        dest="load_api_key",
        help=f"send 'authorization: Bearer KEY' (default: the global --api-key, env {API_KEY_ENV})",
    )
    parser.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="KEY:VALUE",
        help="metadata on every call (repeatable)",
    )
    tls = parser.add_argument_group(
        "TLS (the global options' names, also accepted here; ghz's --cacert/--cert/--key are aliases)"
    )
    tls.add_argument("--root-cert", "--cacert", dest="cacert", help="PEM CA of the server's certificate: TLS")
    tls.add_argument("--client-cert", "--cert", dest="cert", help="PEM client certificate for mTLS")
    tls.add_argument("--client-key", "--key", dest="key", help="PEM key of --client-cert")
    tls.add_argument("--cname", help="the name the server's certificate must carry, if not the target's host")
    tls.add_argument("--insecure", action="store_true", help="TLS without verifying the server's certificate")


def metadata_from_args(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """Tenant, API key and the -H headers, as gRPC metadata (keys lower-cased, as HTTP/2 wants)."""
    pairs: list[tuple[str, str]] = []
    if args.tenant:
        pairs.append(("x-strata-tenant", args.tenant))
    api_key = args.load_api_key or args.api_key or os.environ.get(API_KEY_ENV)
    if api_key:
        pairs.append(("authorization", f"Bearer {api_key}"))
    for header in args.header:
        key, sep, value = header.partition(":")
        if not sep or not key.strip():
            raise UsageError(f"-H takes KEY:VALUE, got {header!r}")
        pairs.append((key.strip().lower(), value.strip()))
    return tuple(pairs)


def tls_from_args(args: argparse.Namespace) -> TlsSpec | None:
    ca = args.cacert or args.root_cert
    cert = args.cert or args.client_cert
    key = args.key or args.client_key
    if not (ca or cert or key or args.insecure or args.cname):
        return None
    return TlsSpec(ca_file=ca, cert_file=cert, key_file=key, server_name=args.cname, insecure=args.insecure)


def spec_from_args(args: argparse.Namespace) -> LoadSpec:
    data = args.data
    if args.data_file:
        try:
            data = Path(args.data_file).read_text(encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot read {args.data_file}: {error.strerror}") from None
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as error:
        raise UsageError(f"--params is not JSON: {error}") from None
    return LoadSpec(
        target=args.address or args.target,
        method=args.call,
        data=data,
        factory=args.factory,
        params=params,
        concurrency=args.concurrency,
        rate=args.rate,
        duration=args.duration,
        requests=args.requests,
        warmup_seconds=args.warmup,
        warmup_requests=args.warmup_requests,
        processes=args.processes,
        timeout=args.call_timeout,
        metadata=metadata_from_args(args),
        max_seconds=args.max_seconds,
        tls=tls_from_args(args),
    )


def _run(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    try:
        report = run_load(spec_from_args(args))
    except LoadTestError as error:
        raise UsageError(str(error)) from None
    if args.output:
        report.write(Path(args.output))
    shown = args.format or ("json" if out.as_json else "text")
    if shown == "json":
        print(json.dumps(report.to_dict(), indent=2))
    elif shown == "csv":
        print(report.to_csv(), end="")
    else:
        print(report.format())
    return 0 if report.ok == report.count else 1
