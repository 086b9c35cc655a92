"""Settings both services share for running behind a load balancer or in a service mesh.

Each service's settings class inherits these, so they read as ``STRATA_MEMORY_DRAIN_SECONDS`` and
``STRATA_RETRIEVAL_DRAIN_SECONDS`` and so on (docs/deployment.md, "Service mesh").
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from strata_serving.server_tracing import TraceExporter


class ServingSettings(BaseSettings):
    # Shutdown: SIGTERM -> NOT_SERVING at once -> keep serving for drain_seconds -> stop accepting ->
    # calls in flight get the service's grace period to finish.
    drain_seconds: float = Field(default=5.0, ge=0)
    """After SIGTERM, seconds to keep answering while health reports NOT_SERVING, so probes, client-side
    health checks and endpoint updates move traffic away first (a Kubernetes gRPC readiness probe every
    2 s with failureThreshold 1 notices within one period)."""
    reuse_port: bool = False
    """Share the port with other processes (SO_REUSEPORT). Off: starting on a bound port fails."""

    # Connections (gRPC channel arguments; docs/deployment.md lists them).
    keepalive_time_seconds: float = Field(default=60.0, gt=0)
    """The server pings an idle connection this often to find dead peers."""
    keepalive_timeout_seconds: float = Field(default=20.0, gt=0)
    """A ping unanswered for this long closes the connection."""
    min_client_ping_interval_seconds: float = Field(default=10.0, ge=0)
    """Clients may ping at most this often (more often: GOAWAY too_many_pings); Strata's clients use 30 s."""
    max_connection_age_seconds: float | None = Field(default=300.0, gt=0)
    """Close each connection (GOAWAY) after about this long, so clients behind an L4 load balancer
    spread over new replicas; None keeps connections for ever."""
    max_connection_age_grace_seconds: float = Field(default=60.0, ge=0)
    """Calls in flight on an aged connection get this long to finish."""
    handshake_timeout_seconds: float = Field(default=5.0, gt=0)
    """A connection that has not finished its handshake (TLS, the HTTP/2 preface and SETTINGS) this
    long after it was accepted is closed (gRPC's default is 120 s)."""
    max_connection_idle_seconds: float | None = Field(default=120.0, gt=0)
    """A connection with no call in flight this long is closed (GOAWAY; clients reconnect on their
    next call); None keeps idle connections until their age runs out."""
    max_connections: int | None = Field(default=None, ge=1)
    """The most connections held at once (more are closed when accepted); None: the descriptor limit
    minus a reserve of 256 (strata_serving.connections)."""

    # Admission (strata_serving.fair_admission; each service's pools and sizes are in its limits).
    admission: bool = True
    """Per-tenant fair pools and per-method request sizes, decided before a request is parsed; off:
    every call is admitted as it comes (only the global message size applies)."""

    # Observability.
    log_level: str = "INFO"
    log_json: bool | None = None
    """JSON log lines; unset: JSON unless stderr is a terminal (then a short console form)."""
    metrics_address: str | None = None
    """host:port of the Prometheus endpoint (``/metrics``); None (the default) serves none, and
    ``:port`` binds loopback only (name ``0.0.0.0`` to serve every interface)."""
    tracing_exporter: TraceExporter = TraceExporter.NONE
    """none | otlp | console. With none no span is recorded (``traceparent`` is still forwarded)."""
    otlp_endpoint: str | None = None
    """OTLP/gRPC collector for ``tracing_exporter=otlp`` (default: the exporter's, localhost:4317):
    ``host:port`` or ``http://host:port`` plaintext, ``https://host:port`` TLS; another scheme
    refuses to start (``strata_serving.server_tracing.otlp_exporter``)."""
    trace_sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """Share of new traces recorded (a caller's sampling decision is always followed)."""
