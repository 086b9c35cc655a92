"""Prometheus metrics: one registry per service, served on its own HTTP port when asked for.

Every service gets the per-method RPC metrics here (requests by status code, latency histogram,
calls in flight); each service adds its own to the same registry (MemoryService its outbox,
RetrievalService its embedder and indexes). A registry per service instance, not the process-wide
default, so two services in one process (tests, the embedded mode) keep their figures apart.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

log = logging.getLogger("strata.metrics")
LOOPBACK = "127.0.0.1"
"""Where ``/metrics`` listens when the address names no host."""

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: from a sub-millisecond cached read to a long reindex batch."""


class RpcMetrics:
    """Per-method figures of the calls a server answers."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "strata_rpc_requests",
            "Calls answered, by method and the status code the client saw.",
            ["method", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "strata_rpc_duration_seconds",
            "Time from the call reaching the handler to its status.",
            ["method"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "strata_rpc_in_flight", "Calls being handled now.", ["method"], registry=registry
        )

    def started(self, method: str) -> None:
        self.in_flight.labels(method).inc()

    def finished(self, method: str, code: str, seconds: float) -> None:
        self.in_flight.labels(method).dec()
        self.requests.labels(method, code).inc()
        self.latency.labels(method).observe(seconds)


@dataclass
class MetricsEndpoint:
    """A running ``/metrics`` HTTP server (its own thread); ``port`` is the bound one."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(registry: CollectorRegistry, address: str) -> MetricsEndpoint:
    """Serve ``registry`` at ``http://address/metrics`` (``host:0`` picks a free port).

    Without a host (``":9100"``) only loopback is bound: every interface only when the operator
    names one (``0.0.0.0:9100``), since ``/metrics`` answers anyone who reaches it."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or LOOPBACK
    server, thread = start_http_server(int(port), addr=host, registry=registry)
    endpoint = MetricsEndpoint(server, thread)
    log.info("metrics on http://%s:%d/metrics", host, endpoint.port)
    return endpoint
