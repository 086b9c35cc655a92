"""A ``grpc.aio`` server with Strata's standard parts: interceptors, health, reflection, shutdown.

Health answers NOT_SERVING until the service calls :meth:`GrpcServer.mark_serving` (after its stores
and indexes are open), and again NOT_SERVING as soon as a shutdown starts, so a load balancer drains
the instance before ``server.stop(grace)`` finishes the calls in flight.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from strata_serving.interceptors import RequestContextInterceptor
from strata_serving.tls import ServerTls

log = logging.getLogger("strata.server")

Registrar = Callable[[grpc.aio.Server], None]


class GrpcServer:
    """Owns one ``grpc.aio.Server`` bound to ``address`` (``host:0`` picks a free port).

    ``extra_interceptors`` run inside the request-context one (so their errors are logged and mapped
    like any other); with ``tls`` the port accepts only TLS (and, with a client CA, only mTLS).
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
    ) -> None:
        self.service_names = tuple(service_names)
        self.server = grpc.aio.server(
            interceptors=[RequestContextInterceptor(), *extra_interceptors], options=list(options)
        )
        register(self.server)
        self.health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            [*self.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server
        )
        if tls is None:
            self.port = self.server.add_insecure_port(address)
        else:
            self.port = self.server.add_secure_port(address, tls.credentials())
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        """Start accepting calls; health stays NOT_SERVING until :meth:`mark_serving`."""
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        log.info("listening on %s", self.address)

    async def mark_serving(self) -> None:
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, grace: float = 5.0) -> None:
        """Report NOT_SERVING, then let calls in flight finish for up to ``grace`` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace)
        log.info("stopped %s", self.address)

    async def serve_until_signal(self, grace: float = 5.0) -> None:
        """Block until SIGTERM or SIGINT, then stop gracefully."""
        loop = asyncio.get_running_loop()
        requested = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, requested.set)
        await requested.wait()
        log.info("shutdown requested")
        await self.stop(grace)

    async def _set_health(self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType) -> None:
        for name in ("", *self.service_names):
            await self.health.set(name, status)
