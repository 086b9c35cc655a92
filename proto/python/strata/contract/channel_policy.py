"""Channel arguments every Strata client uses: keepalive, and retries of UNAVAILABLE through gRPC's
service config.

Keepalive pings an idle connection every 30 s (the servers accept pings every 10 s or slower), so a
connection a load balancer or NAT silently dropped is noticed instead of hanging the next call.
gRPC retries a call that failed with UNAVAILABLE (a replica draining or restarting) up to 3 more
times with backoff, only for methods that are safe to repeat: reads (``Get…``, ``List…``,
``Search…``, ``Render…``, ``Diff…``, ``Stats``) and RetrievalService's idempotent upserts and deletes.
The Strata clients' channels also retry ``AppendMessages`` and ``CreatePassages``, which they always
send with a ``request_id``: the server applies a repeated request_id once (AIP-155). Other writes,
and these two sent without a request_id (a raw stub), are never repeated behind the caller's back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf.descriptor import ServiceDescriptor

from strata.memory.v1 import memory_service_pb2
from strata.retrieval.v1 import retrieval_pb2

KEEPALIVE_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
RETRY_POLICY: dict[str, Any] = {
    "maxAttempts": 4,
    "initialBackoff": "0.1s",
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
READ_PREFIXES = ("Get", "List", "Search", "Render", "Diff", "Stats")
IDEMPOTENT_WRITES = ("AppendMessages", "CreatePassages")
"""MemoryService writes that take a ``request_id``: safe to repeat when one is set."""


def read_methods(service: ServiceDescriptor) -> list[tuple[str, str | None]]:
    """``(service, method)`` for each method of ``service`` that only reads."""
    return [(service.full_name, m.name) for m in service.methods if m.name.startswith(READ_PREFIXES)]


def service_config(
    retryable: Iterable[tuple[str, str | None]], *, balance_on_health: str | None = None
) -> str:
    """A service config retrying UNAVAILABLE for ``(service, method)`` pairs (method None: all).

    With ``balance_on_health`` (a gRPC service name), calls go round robin over every address the
    target resolves to (a Kubernetes headless Service: one per pod), each address in rotation only
    while its ``Health/Watch`` for that name says SERVING, so a draining replica stops getting calls."""
    names = [{"service": s} if m is None else {"service": s, "method": m} for s, m in retryable]
    config: dict[str, Any] = {"methodConfig": [{"name": names, "retryPolicy": RETRY_POLICY}]}
    if balance_on_health is not None:
        config["loadBalancingConfig"] = [{"round_robin": {}}]
        config["healthCheckConfig"] = {"serviceName": balance_on_health}
    return json.dumps(config)


def channel_options(
    retryable: Iterable[tuple[str, str | None]],
    given: Sequence[tuple[str, Any]] = (),
    *,
    balance_on_health: str | None = None,
) -> list[tuple[str, Any]]:
    """Keepalive and the retry policy (and balancing, see :func:`service_config`), under any option
    of the same name in ``given`` (which wins)."""
    config = service_config(retryable, balance_on_health=balance_on_health)
    ours = [*KEEPALIVE_OPTIONS, ("grpc.enable_retries", 1), ("grpc.service_config", config)]
    taken = {name for name, _ in given}
    return [*(option for option in ours if option[0] not in taken), *given]


def strata_retryable() -> list[tuple[str, str | None]]:
    """MemoryService's reads and all of RetrievalService (its writes are idempotent upserts/deletes)."""
    memory = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"]
    retrieval = retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"]
    return [*read_methods(memory), (retrieval.full_name, None)]


def client_retryable() -> list[tuple[str, str | None]]:
    """``strata_retryable`` and the writes the Strata clients send with a request_id."""
    memory = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
    return [*strata_retryable(), *((memory, name) for name in IDEMPOTENT_WRITES)]
