"""``strata loadtest CALL``: load-test one unary RPC of either service (loopback only), ghz-style.

    strata loadtest grpc.health.v1.Health/Check -c 8 -z 5 --warmup 1
    strata --target 127.0.0.1:50052 loadtest strata.retrieval.v1.RetrievalService/Stats \\
        -d '{"filter": {"tenant_id": "default"}}' -n 2000 -c 4 --processes 2 -o stats.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from strata.cli.commands import Subparsers, UsageError, command
from strata.cli.output import Printer
from strata.client import MemoryClient
from strata.loadtest import LoadSpec, LoadTestError, run_load


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
    parser.add_argument("-o", "--output", help="also write the report as JSON to this file")


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
    metadata = (("x-strata-tenant", args.tenant),) if args.tenant else ()
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
        metadata=metadata,
        max_seconds=args.max_seconds,
    )


def _run(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    try:
        report = run_load(spec_from_args(args))
    except LoadTestError as error:
        raise UsageError(str(error)) from None
    if args.output:
        report.write_json(Path(args.output))
    if out.as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.format())
    return 0 if report.ok == report.count else 1
