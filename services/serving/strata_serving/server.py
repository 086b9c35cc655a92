"""A ``grpc.aio`` server with Strata's standard parts: interceptors, health, reflection, metrics,
connection management and a graceful drain.

Health answers NOT_SERVING until the service calls :meth:`GrpcServer.mark_serving` (after its stores
and indexes are open). On SIGTERM it reports NOT_SERVING at once (Watch streams see it), keeps serving
for the drain period so load balancers and health-following clients move away, then stops accepting
and lets the calls in flight finish within the grace period.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from strata_serving.connections import connection_cap, connection_options, raise_descriptor_limit
from strata_serving.health import HealthServicer, ServingStatus
from strata_serving.interceptors import RequestContextInterceptor
from strata_serving.metrics import MetricsEndpoint, RpcMetrics, serve_metrics
from strata_serving.reflection import enable_reflection
from strata_serving.settings import ServingSettings
from strata_serving.tls import ServerTls

log = logging.getLogger("strata.server")

Registrar = Callable[[grpc.aio.Server], None]


class PortInUse(RuntimeError):
    """The server's port is taken by another process and sharing it was not asked for."""


def port_in_use(address: str) -> bool:
    """Whether another socket holds ``address``'s port (a plain bind fails with EADDRINUSE)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - only a probe, closed at once
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0]
    except (OSError, ValueError):
        return False
    with socket.socket(family, kind, proto) as probe:
        try:
            probe.bind(where)
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


def channel_options(settings: ServingSettings, descriptor_limit: int) -> list[tuple[str, Any]]:
    """Server channel arguments for ``settings``: port sharing, keepalive and its enforcement,
    connection age, and the connection hygiene of :mod:`strata_serving.connections` (handshake
    timeout, idle limit, a cap below ``descriptor_limit``)."""
    options: list[tuple[str, Any]] = [
        ("grpc.so_reuseport", 1 if settings.reuse_port else 0),
        ("grpc.keepalive_time_ms", _ms(settings.keepalive_time_seconds)),
        ("grpc.keepalive_timeout_ms", _ms(settings.keepalive_timeout_seconds)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", _ms(settings.min_client_ping_interval_seconds)),
        ("grpc.http2.max_ping_strikes", 2),
    ]
    if settings.max_connection_age_seconds is not None:
        options += [
            ("grpc.max_connection_age_ms", _ms(settings.max_connection_age_seconds)),
            ("grpc.max_connection_age_grace_ms", _ms(settings.max_connection_age_grace_seconds)),
        ]
    return options + connection_options(
        handshake_timeout_seconds=settings.handshake_timeout_seconds,
        max_connection_idle_seconds=settings.max_connection_idle_seconds,
        max_connections=connection_cap(descriptor_limit, settings.max_connections),
    )


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class GrpcServer:
    """Owns one ``grpc.aio.Server`` bound to ``address`` (``host:0`` picks a free port).

    ``extra_interceptors`` run inside the request-context one (so their errors are logged and mapped
    like any other); with ``tls`` the port accepts only TLS (and, with a client CA, only mTLS).
    ``serving`` holds the shared settings (drain, port sharing, keepalive, metrics) and
    ``settings_prefix`` their environment prefix, to name them in messages. The service's own metrics
    go in ``registry`` (one is made if not given), served with the RPC metrics when
    ``serving.metrics_address`` is set.
    """

    def __init__(
        self,
        address: str,
        *,
        service_names: Sequence[str],
        register: Registrar,
        extra_interceptors: Sequence[grpc.aio.ServerInterceptor[Any, Any]] = (),
        options: Sequence[tuple[str, Any]] = (),
        tls: ServerTls | None = None,
        serving: ServingSettings | None = None,
        settings_prefix: str = "STRATA_",
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings = serving if serving is not None else ServingSettings.model_construct()
        self.service_names = tuple(service_names)
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.metrics_enabled = self.settings.metrics_address is not None
        rpc_metrics = RpcMetrics(self.registry) if self.metrics_enabled else None
        self.server = grpc.aio.server(
            interceptors=[RequestContextInterceptor(rpc_metrics), *extra_interceptors],
            options=[*channel_options(self.settings, raise_descriptor_limit()), *options],
        )
        register(self.server)
        self.health = HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        enable_reflection(self.server, [*self.service_names, health.SERVICE_NAME])
        self.port = self._bind(address, tls, settings_prefix)
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self.metrics: MetricsEndpoint | None = None
        self._stopped = asyncio.Event()

    def _bind(self, address: str, tls: ServerTls | None, prefix: str) -> int:
        """Listen on ``address``; a TLS file problem is a ``TlsConfigError`` (checked first), and
        "port in use" is said only when a socket cannot bind the port either."""
        credentials = tls.credentials() if tls is not None else None
        try:
            if credentials is None:
                return self.server.add_insecure_port(address)
            return self.server.add_secure_port(address, credentials)
        except RuntimeError as failure:
            if not port_in_use(address):
                raise RuntimeError(f"cannot listen on {address}: gRPC refused the address") from failure
            reuse = f"{prefix}REUSE_PORT"
            raise PortInUse(
                f"cannot listen on {address}: the port is already in use (another Strata instance, or a "
                f"stale one?). Stop it, choose another address, or set {reuse}=true to share the port "
                "on purpose (SO_REUSEPORT, as the benchmark's two-process run does)."
            ) from failure

    async def start(self) -> None:
        """Start accepting calls; health stays NOT_SERVING until :meth:`mark_serving`."""
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        if self.settings.metrics_address is not None:
            self.metrics = serve_metrics(self.registry, self.settings.metrics_address)
        log.info("listening on %s", self.address)

    async def mark_serving(self) -> None:
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, grace: float = 5.0, *, drain: float = 0.0) -> None:
        """Report NOT_SERVING, keep serving for ``drain`` seconds, then stop accepting and let calls
        in flight finish for up to ``grace`` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        await self.health.enter_graceful_shutdown()
        if drain > 0:
            log.info("draining for %.1f s (health NOT_SERVING, still answering)", drain)
            await asyncio.sleep(drain)
        await self.server.stop(grace)
        if self.metrics is not None:
            self.metrics.close()
        log.info("stopped %s", self.address)

    async def serve_until_signal(self, grace: float = 5.0) -> None:
        """Block until SIGTERM or SIGINT, then drain (``drain_seconds``) and stop gracefully."""
        loop = asyncio.get_running_loop()
        requested = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, requested.set)
        await requested.wait()
        log.info("shutdown requested")
        await self.stop(grace, drain=self.settings.drain_seconds)

    async def _set_health(self, status: ServingStatus) -> None:
        for name in ("", *self.service_names):
            await self.health.set(name, status)
