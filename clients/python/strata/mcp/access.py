"""Who an MCP request acts as: the caller's own Strata API key, and the MemoryService client it uses.

Over streamable HTTP the bearer token of each HTTP request is the caller's Strata API key, passed on
unchanged to MemoryService, so every request acts as that key's tenant: the MCP server holds no
identity of its own and nothing tenant-specific is in the URL. Over stdio the key is the one the
server was started with (``STRATA_API_KEY``). :class:`BearerGate` refuses an HTTP request before it
reaches the MCP session when MemoryService refuses its key: 401 without a key or with one
MemoryService does not know, 403 when the key may not use MemoryService (the admin key), each with
the service's message.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from strata.client import (
    AsyncMemoryClient,
    PermissionDeniedError,
    StrataClientError,
    UnauthenticatedError,
    UnavailableError,
)

UNAUTHORIZED_CODE = -32001
"""The JSON-RPC error code of a refused key (implementation-defined server errors: -32000..-32099)."""

ClientFactory = Callable[[str | None], AsyncMemoryClient]
"""Opens a MemoryService client that sends the given API key (``None``: no key)."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; ``None`` if absent or another scheme."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def request_key(request: object, default: str | None) -> str | None:
    """The API key a request acts with: its bearer token over HTTP, ``default`` over stdio."""
    if isinstance(request, Request):
        return bearer_token(request.headers.get("authorization"))
    return default


class ClientPool:
    """One MemoryService client per API key, the least recently used closed beyond ``size``.

    Keys are held only as SHA-256 digests in the pool's index; the client itself sends the key.
    """

    def __init__(self, factory: ClientFactory, size: int = 64) -> None:
        self._factory = factory
        self._size = size
        self._clients: OrderedDict[str, AsyncMemoryClient] = OrderedDict()

    def client(self, key: str | None) -> AsyncMemoryClient:
        """The client sending ``key``, opened on first use."""
        index = _digest(key)
        found = self._clients.get(index)
        if found is not None:
            self._clients.move_to_end(index)
            return found
        opened = self._factory(key)
        self._clients[index] = opened
        return opened

    async def trim(self) -> None:
        """Close the least recently used clients beyond the pool's size."""
        while len(self._clients) > self._size:
            _, oldest = self._clients.popitem(last=False)
            await oldest.close()

    async def discard(self, key: str | None) -> None:
        """Close and forget the client of a key MemoryService refused."""
        client = self._clients.pop(_digest(key), None)
        if client is not None:
            await client.close()

    async def close(self) -> None:
        while self._clients:
            _, client = self._clients.popitem()
            await client.close()


@dataclass(frozen=True)
class Refusal:
    """An HTTP refusal: status code, an error word (as in RFC 6750) and the message for a person."""

    status: int
    error: str
    message: str


MISSING_KEY = Refusal(
    401,
    "invalid_request",
    "this MCP server needs your Strata API key: send 'Authorization: Bearer <key>' "
    "(an admin creates one with 'strata admin create-key --tenant T')",
)


def refusal_for(error: StrataClientError) -> Refusal | None:
    """How MemoryService's refusal of a key reads over HTTP; ``None`` if it did not refuse the key."""
    detail = error.message + (f" (reason: {error.reason})" if error.reason else "")
    if isinstance(error, UnauthenticatedError):
        return Refusal(401, "invalid_token", f"MemoryService refused the API key: {detail}")
    if isinstance(error, PermissionDeniedError):
        return Refusal(403, "insufficient_scope", f"MemoryService refused the API key: {detail}")
    if isinstance(error, UnavailableError):
        return Refusal(503, "temporarily_unavailable", f"MemoryService is unavailable: {detail}")
    return None


class BearerGate:
    """ASGI middleware: every HTTP request needs a bearer key MemoryService accepts.

    A key is checked with one ``ListTools`` call as that key; an accepted key is remembered for
    ``ttl`` seconds (a key revoked meanwhile is still refused by MemoryService on the call itself,
    which the caller sees as a tool error). A refusal has the status of :func:`refusal_for`, a
    ``WWW-Authenticate: Bearer`` header on 401, and a JSON-RPC error as body (``{"jsonrpc", "id":
    null, "error": {"code", "message", "data": {"error"}}}``), so an MCP client shows its user the
    message rather than a bare status.
    """

    def __init__(self, app: ASGIApp, pool: ClientPool, ttl: float = 10.0) -> None:
        self._app = app
        self._pool = pool
        self._ttl = ttl
        self._accepted: dict[str, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        key = bearer_token(Headers(scope=scope).get("authorization"))
        refusal = MISSING_KEY if key is None else await self._check(key)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        await _refuse(refusal, send)

    async def _check(self, key: str) -> Refusal | None:
        index, now = _digest(key), time.monotonic()
        if self._accepted.get(index, 0.0) > now:
            return None
        try:
            await self._pool.client(key).list_tools()
        except StrataClientError as error:
            refusal = refusal_for(error)
            if refusal is not None and refusal.status != 503:
                await self._pool.discard(key)
            if refusal is not None:
                return refusal
            raise
        self._accepted = {k: t for k, t in self._accepted.items() if t > now}
        self._accepted[index] = now + self._ttl
        await self._pool.trim()
        return None


async def _refuse(refusal: Refusal, send: Send) -> None:
    error = {"code": UNAUTHORIZED_CODE, "message": refusal.message, "data": {"error": refusal.error}}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if refusal.status == 401:
        description = refusal.message.replace('"', "'").replace("\n", " ")
        challenge = f'Bearer error="{refusal.error}", error_description="{description}"'
        headers.append((b"www-authenticate", challenge.encode("latin-1", "replace")))
    start: dict[str, Any] = {"type": "http.response.start", "status": refusal.status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


def _digest(key: str | None) -> str:
    return "" if key is None else hashlib.sha256(key.encode()).hexdigest()
