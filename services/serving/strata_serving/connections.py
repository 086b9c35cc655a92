"""Connection hygiene: how long a connection may take to start, how long it may sit idle, and how
many connections the server holds at once.

- A connection must finish its handshake (TLS when on, then the client's HTTP/2 preface and SETTINGS)
  within ``handshake_timeout_seconds`` or the server closes it. gRPC's own default is 120 s, which let
  raw TCP connections that never speak HTTP/2 pile up until the process ran out of descriptors.
- A connection with no call in flight for ``max_connection_idle_seconds`` is sent GOAWAY and closed;
  gRPC clients reconnect on their next call without failing it.
- At most ``max_connections`` connections are held at once; a connection beyond that is closed as
  soon as it is accepted. Unset, the cap is the process's descriptor limit minus
  :data:`DESCRIPTOR_RESERVE`, so connections can never take the descriptors the service needs for its
  own files, store and outbound channels.
- At start the soft descriptor limit is raised to the hard one (:func:`raise_descriptor_limit`).

There is no cap per peer: grpcio has no channel argument for one and no way to hand it accepted
sockets, so a per-address limit belongs in front of the server (the load balancer or a firewall
rule); docs/deployment.md, "Connections and descriptors", says how and what the budget is.
"""

from __future__ import annotations

import logging
import resource
from typing import Any

log = logging.getLogger("strata.server")

DESCRIPTOR_RESERVE = 256
"""Descriptors kept back from connections: store and index files, log files, the outbox's and the
search path's channels, the metrics endpoint, a PostgreSQL pool."""
MIN_CONNECTIONS = 16
"""The cap never goes below this, however low the descriptor limit."""


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (where the OS allows); returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        log.warning("could not raise the descriptor limit from %d to %d", soft, hard)
        return soft
    return hard


def connection_cap(descriptor_limit: int, configured: int | None) -> int:
    """The most connections held at once: ``configured`` if set, else the descriptor limit minus the
    reserve (never below :data:`MIN_CONNECTIONS`)."""
    if configured is not None:
        return configured
    return max(MIN_CONNECTIONS, descriptor_limit - DESCRIPTOR_RESERVE)


def connection_options(
    *,
    handshake_timeout_seconds: float,
    max_connection_idle_seconds: float | None,
    max_connections: int,
) -> list[tuple[str, Any]]:
    """gRPC server channel arguments for the handshake timeout, the idle limit and the cap."""
    options: list[tuple[str, Any]] = [
        ("grpc.server_handshake_timeout_ms", round(handshake_timeout_seconds * 1000)),
        ("grpc.max_allowed_incoming_connections", max_connections),
    ]
    if max_connection_idle_seconds is not None:
        options.append(("grpc.max_connection_idle_ms", round(max_connection_idle_seconds * 1000)))
    return options
