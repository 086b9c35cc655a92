"""Prometheus metrics: one registry per service, served on its own HTTP port when asked for.

Every service gets the per-method RPC metrics here, named and labelled as grpc-prometheus
(go-grpc-prometheus, py-grpc-prometheus) names them, so stock gRPC dashboards and alerts work:
``grpc_server_started_total``, ``grpc_server_handled_total`` (with ``grpc_code``, the status the
client saw) and the ``grpc_server_handling_seconds`` histogram, each by ``grpc_type`` (``unary``,
``client_stream``, ``server_stream``, ``bidi_stream``), ``grpc_service`` and ``grpc_method``; plus
``strata_rpc_in_flight`` (calls being handled now, same labels). The process collectors
(``process_*``, ``python_*``, ``python_gc_*``) are registered too. Each service adds its own to
the same registry (MemoryService its outbox, RetrievalService its embedder and indexes). A registry
per service instance, not the process-wide default, so two services in one process (tests, the
embedded mode) keep their figures apart.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)

log = logging.getLogger("strata.metrics")
LOOPBACK = "127.0.0.1"
"""Where ``/metrics`` listens when the address names no host."""

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: from a sub-millisecond cached read to a long reindex batch."""


RPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")


def rpc_labels(method: str, grpc_type: str) -> tuple[str, str, str]:
    """``(grpc_type, grpc_service, grpc_method)`` of a full method name ``/pkg.Service/Method``."""
    service, _, name = method.lstrip("/").partition("/")
    return grpc_type, service, name


class RpcMetrics:
    """Per-method figures of the calls a server answers (grpc-prometheus names; module docstring)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.started_calls = Counter(
            "grpc_server_started", "Calls started on the server.", RPC_LABELS, registry=registry
        )
        self.handled = Counter(
            "grpc_server_handled",
            "Calls completed on the server, by the status code the client saw.",
            [*RPC_LABELS, "grpc_code"],
            registry=registry,
        )
        self.latency = Histogram(
            "grpc_server_handling_seconds",
            "Time from the call reaching the handler to its status.",
            RPC_LABELS,
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "strata_rpc_in_flight", "Calls being handled now.", RPC_LABELS, registry=registry
        )
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=registry)

    def started(self, labels: tuple[str, str, str]) -> None:
        self.started_calls.labels(*labels).inc()
        self.in_flight.labels(*labels).inc()

    def finished(self, labels: tuple[str, str, str], code: str, seconds: float) -> None:
        self.in_flight.labels(*labels).dec()
        self.handled.labels(*labels, code).inc()
        self.latency.labels(*labels).observe(seconds)


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
