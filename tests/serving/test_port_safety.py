"""A second server on a port already in use refuses to start, unless sharing is asked for."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.server import GrpcServer, PortInUse
from strata_serving.settings import ServingSettings

SERVICE = "strata.test.Port"


def _nothing(server: grpc.aio.Server) -> None:
    del server


async def test_a_bound_port_is_refused_with_a_message_naming_port_and_setting() -> None:
    first = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_nothing)
    await first.start()
    try:
        with pytest.raises(PortInUse) as refused:
            GrpcServer(first.address, service_names=[SERVICE], register=_nothing, settings_prefix="STRATA_X_")
    finally:
        await first.stop(0)
    assert str(first.port) in str(refused.value)
    assert "STRATA_X_REUSE_PORT" in str(refused.value)


async def test_sharing_the_port_works_when_both_ask_for_it() -> None:
    shared = ServingSettings.model_construct(reuse_port=True)
    first = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_nothing, serving=shared)
    await first.start()
    try:
        second = GrpcServer(first.address, service_names=[SERVICE], register=_nothing, serving=shared)
        await second.start()
        await second.stop(0)
    finally:
        await first.stop(0)
    assert second.port == first.port


async def test_a_second_memory_service_on_the_same_port_does_not_start(tmp_path: Path) -> None:
    def settings(name: str, address: str) -> MemorySettings:
        return MemorySettings(
            address=address,
            database_url=f"sqlite:///{tmp_path}/{name}.sqlite3",
            retrieval_address="127.0.0.1:9",
        )

    running = await start_memory_server(settings("one", "127.0.0.1:0"))
    try:
        with pytest.raises(PortInUse, match="STRATA_MEMORY_REUSE_PORT"):
            await start_memory_server(settings("two", running.address))
    finally:
        await running.stop(0)
