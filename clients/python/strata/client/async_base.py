"""The channel, metadata, deadline and error translation behind Strata's async clients.

``sync_base.py`` is generated from this file by ``scripts/generate_sync_client.py``; keep to
spellings that have a ``grpc`` (blocking) twin.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from google.protobuf.message import Message

from strata.client.arguments import API_KEY_ENV, DEFAULT_TIMEOUT, call_metadata
from strata.client.errors import error_from_rpc
from strata.client.paging import MAX_PAGES
from strata.contract.channel_policy import channel_options, client_retryable

RECEIVE_ANY_SIZE = ("grpc.max_receive_message_length", -1)
"""Responses are not bounded by the server (docs/security.md, Limits): what was stored in pieces
(an agent's blocks, a page of long passages) may be read back in one response larger than gRPC's
4 MiB default. Pass your own ``grpc.max_receive_message_length`` in ``options`` to bound it."""

RequestT = TypeVar("RequestT", bound=Message)
ResponseT = TypeVar("ResponseT", bound=Message)


class AsyncClientBase:
    """Owns a ``grpc.aio`` channel to a Strata service; use as a context manager or call ``close()``.

    ``tenant`` is sent as ``x-strata-tenant`` on every call (MemoryService's "default" if ``None``);
    ``timeout`` is the deadline of each unary call in seconds. Pass ``credentials`` for TLS
    (:func:`strata.client.arguments.tls_credentials`). ``api_key`` is sent as ``authorization:
    Bearer …`` (``STRATA_API_KEY`` from the environment when ``None``); with a tenant key the tenant
    is the key's, so ``tenant`` may be left out.
    ``target`` may name several replicas (``ipv4:127.0.0.1:50061,127.0.0.1:50062``): calls are spread
    over them round robin, each while its health check says SERVING (:mod:`strata.contract.channel_policy`).
    The channel opens at construction (with asyncio: create the client in the loop that uses it).
    ``iter_*`` methods follow at most ``max_pages`` pages and stop at a repeated page token
    (:mod:`strata.client.paging`): a server cannot keep the client paging forever.
    """

    def __init__(
        self,
        target: str,
        *,
        tenant: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        api_key: str | None = None,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self.target = target
        self.tenant = tenant
        self.timeout = timeout
        self.max_pages = max_pages
        self._metadata = call_metadata(tenant, api_key or os.environ.get(API_KEY_ENV) or None)
        if not any(name == RECEIVE_ANY_SIZE[0] for name, _ in options):
            options = [RECEIVE_ANY_SIZE, *options]
        # keepalive, retry of UNAVAILABLE, calls round robin over the replicas the target names
        options = channel_options(client_retryable(), options, balance_on_health="")
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(target, options=list(options))
        else:
            self._channel = grpc.aio.secure_channel(target, credentials, options=list(options))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        await self._channel.close(grace=None)

    async def _call(
        self, method: grpc.aio.UnaryUnaryMultiCallable[RequestT, ResponseT], request: RequestT
    ) -> ResponseT:
        """One unary call with the tenant and deadline; a failure becomes a ``StrataClientError``."""
        try:
            return await method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None

    async def _stream(
        self,
        method: grpc.aio.UnaryStreamMultiCallable[RequestT, ResponseT],
        request: RequestT,
        deadline: float | None,
    ) -> AsyncIterator[ResponseT]:
        """The responses of a server-streaming call; ``deadline`` seconds bound the whole stream."""
        try:
            async for response in method(request, timeout=deadline, metadata=self._metadata):
                yield response
        except grpc.RpcError as error:
            raise error_from_rpc(error) from None
