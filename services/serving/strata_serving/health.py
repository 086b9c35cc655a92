"""``grpc.health.v1.Health`` with Check, Watch and List (grpcio-health-checking 1.85.1 lacks List).

The service names to probe are the fully qualified gRPC service names (``strata.memory.v1.MemoryService``,
``strata.retrieval.v1.RetrievalService``) and ``""`` for the whole server; List answers all of them.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2

ServingStatus: TypeAlias = health_pb2.HealthCheckResponse.ServingStatus.ValueType


class HealthServicer(health_aio.HealthServicer):  # type: ignore[misc]  # grpcio-health has no hints
    """grpcio-health's asyncio servicer plus ``List``; remembers what it was told to report."""

    def __init__(self) -> None:
        super().__init__()
        self._statuses: dict[str, ServingStatus] = {"": health_pb2.HealthCheckResponse.SERVING}
        self._shutting_down = False

    async def set(self, service: str, status: ServingStatus) -> None:
        if not self._shutting_down:
            self._statuses[service] = status
        await super().set(service, status)

    async def enter_graceful_shutdown(self) -> None:
        """NOT_SERVING for every service from now on (Watch streams see the change at once)."""
        if not self._shutting_down:
            self._shutting_down = True
            self._statuses = dict.fromkeys(self._statuses, health_pb2.HealthCheckResponse.NOT_SERVING)
        await super().enter_graceful_shutdown()

    async def List(  # noqa: N802  # the gRPC method name
        self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthListResponse:
        del request, context
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status) for name, status in self._statuses.items()
            }
        )
