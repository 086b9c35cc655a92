"""The clients' channel policy against a real server: UNAVAILABLE is retried for reads only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from strata.contract.channel_policy import channel_options
from strata_serving.server import GrpcServer

SERVICE = "strata.test.Flaky"


class Flaky:
    """Each method fails its first call with UNAVAILABLE (a replica going away), then answers."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def handler(self, name: str) -> grpc.RpcMethodHandler[Any, Any]:
        async def behaviour(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            self.calls[name] = self.calls.get(name, 0) + 1
            if self.calls[name] == 1:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "draining")
            return request

        return grpc.unary_unary_rpc_method_handler(behaviour)


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[GrpcServer, Flaky]]:
    state = Flaky()

    def register(server: grpc.aio.Server) -> None:
        methods = {name: state.handler(name) for name in ("GetThing", "AppendThing")}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))

    server = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=register)
    await server.start()
    yield server, state
    await server.stop(0)


async def test_a_read_is_retried_and_a_write_is_not(flaky: tuple[GrpcServer, Flaky]) -> None:
    server, state = flaky
    options = channel_options([(SERVICE, "GetThing")])
    async with grpc.aio.insecure_channel(server.address, options=options) as channel:
        assert await channel.unary_unary(f"/{SERVICE}/GetThing", None, None)(b"x", timeout=10) == b"x"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await channel.unary_unary(f"/{SERVICE}/AppendThing", None, None)(b"y", timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert state.calls == {"GetThing": 2, "AppendThing": 1}


def test_options_given_by_the_caller_win() -> None:
    options = dict(channel_options([(SERVICE, None)], [("grpc.keepalive_time_ms", 5000)]))
    assert options["grpc.keepalive_time_ms"] == 5000
    assert options["grpc.enable_retries"] == 1
