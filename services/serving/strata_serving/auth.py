"""Who is calling: bearer API keys checked by one server interceptor on both services.

A call carries ``authorization: Bearer <key>``. The service's :class:`Authenticator` turns the key
into a :class:`Principal` — a tenant, the admin or the service account MemoryService uses towards
RetrievalService — or refuses it (UNAUTHENTICATED). An :class:`AccessPolicy` then says which kinds
of principal may call each gRPC service (PERMISSION_DENIED otherwise); health and reflection stay
open so probes and tooling work without a key. The principal is visible to handlers through
:func:`current_principal` (and :func:`strata_serving.tenancy.tenant_of` takes the tenant from it).

Keys are never logged: refusals name the reason and, at most, the key id.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, cast

import grpc

from strata_serving.errors import PermissionDenied, Unauthenticated
from strata_serving.handlers import Context, rewrap
from strata_serving.key_strength import check_key

AUTHORIZATION_KEY = "authorization"
KEY_PREFIX = "sk"
_KEY_ID_BYTES = 8
_SECRET_BYTES = 32
OPEN_SERVICES = frozenset(
    {
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection",
    }
)

if TYPE_CHECKING:  # grpc's classes are generic only in their type stubs
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = grpc.aio.ServerInterceptor


class PrincipalKind(StrEnum):
    TENANT = "tenant"
    ADMIN = "admin"
    SERVICE = "service"


@dataclass(frozen=True)
class Principal:
    kind: PrincipalKind
    key_id: str
    tenant: str | None = None


_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("principal", default=None)


def current_principal() -> Principal | None:
    """The authenticated caller of the current call; ``None`` when the service runs without auth."""
    return _principal.get()


_admission: contextvars.ContextVar[Callable[[], Awaitable[Principal]] | None] = contextvars.ContextVar(
    "admission", default=None
)


async def recheck_credentials() -> None:
    """Authenticate the running call's key again: a long stream calls this between messages, so a key
    revoked meanwhile ends it (UNAUTHENTICATED). A no-op for calls that needed no key."""
    admit = _admission.get()
    if admit is not None:
        await admit()


class Authenticator(Protocol):
    async def authenticate(self, token: str) -> Principal | None:
        """The principal ``token`` proves, or ``None`` when it proves nothing (unknown, revoked)."""
        ...


@dataclass(frozen=True)
class MintedKey:
    """A freshly created key: the full bearer token (shown once) and what the store keeps."""

    key_id: str
    token: str
    secret_sha256: str


def mint_key() -> MintedKey:
    """A new key ``sk_<key id>_<secret>``: 64 random bits of id to find it, 256 bits of secret."""
    key_id = secrets.token_hex(_KEY_ID_BYTES)
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    return MintedKey(key_id, f"{KEY_PREFIX}_{key_id}_{secret}", hash_secret(secret))


def hash_secret(secret: str) -> str:
    """SHA-256 of the secret part; a random 256-bit secret needs no salt or slow hash."""
    return hashlib.sha256(secret.encode()).hexdigest()


def split_key(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed minted key, else ``None``."""
    prefix, _, rest = token.partition("_")
    key_id, _, secret = rest.partition("_")
    if prefix != KEY_PREFIX or len(key_id) != 2 * _KEY_ID_BYTES or not secret:
        return None
    return key_id, secret


def secret_matches(secret: str, stored_sha256: str) -> bool:
    """Constant-time comparison of a presented secret with a stored hash."""
    return hmac.compare_digest(hash_secret(secret), stored_sha256)


class StaticKey:
    """One key fixed by configuration (the admin key, the service key), compared in constant time."""

    def __init__(self, token: str, principal: Principal) -> None:
        check_key(f"the {principal.kind} key", token)
        self._digest = hashlib.sha256(token.encode()).digest()
        self.principal = principal

    def matches(self, token: str) -> bool:
        return hmac.compare_digest(hashlib.sha256(token.encode()).digest(), self._digest)


class StaticKeys:
    """An authenticator over configured keys only (RetrievalService's service key)."""

    def __init__(self, keys: Sequence[StaticKey]) -> None:
        self._keys = tuple(keys)

    async def authenticate(self, token: str) -> Principal | None:
        found = None
        for key in self._keys:  # compare with every key so timing does not tell which one matched
            if key.matches(token):
                found = key.principal
        return found


@dataclass(frozen=True)
class AccessPolicy:
    """Which principal kinds may call each gRPC service; services not named are refused to all.

    ``None`` as the kinds of a service means it is open (no key needed), as health and reflection are.
    ``methods`` overrides a service's entry for single methods (``/package.Service/Method``).
    """

    services: Mapping[str, frozenset[PrincipalKind] | None]
    methods: Mapping[str, frozenset[PrincipalKind] | None] = field(default_factory=dict)

    def kinds_for(self, method: str) -> frozenset[PrincipalKind] | None:
        if method in self.methods:
            return self.methods[method]
        service = method.lstrip("/").split("/", 1)[0]
        if service in OPEN_SERVICES:
            return None
        return self.services.get(service, frozenset())


def require_operator(what: str) -> None:
    """Refuse a cross-tenant operation unless the caller is the admin (or auth is off)."""
    principal = current_principal()
    if principal is not None and principal.kind is not PrincipalKind.ADMIN:
        raise PermissionDenied(f"{what} needs the admin key", reason="ADMIN_ONLY")


def bearer_token(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    for key, value in metadata or ():
        if key == AUTHORIZATION_KEY:
            text = value if isinstance(value, str) else value.decode(errors="replace")
            scheme, _, token = text.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated(
                    "the authorization metadata must be 'Bearer <API key>'", reason="MALFORMED_CREDENTIALS"
                )
            return token.strip()
    return None


class AuthInterceptor(_Interceptor):
    """Authenticates every call the policy does not leave open; place it after the request-context one.

    Refusals are raised as typed errors inside the handler, so the request-context interceptor logs
    them and sends the status with its ``ErrorInfo`` like any other domain error.
    """

    def __init__(self, authenticator: Authenticator, policy: AccessPolicy) -> None:
        self._authenticator = authenticator
        self._policy = policy

    async def intercept_service(  # type: ignore[override]  # grpc returns None for unknown methods
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        kinds = self._policy.kinds_for(method)
        if handler is None or kinds is None:
            return handler
        metadata = cast(Sequence[tuple[str, str | bytes]], handler_call_details.invocation_metadata)

        async def admit() -> Principal:
            token = bearer_token(metadata)
            if token is None:
                raise Unauthenticated(
                    "this service needs an API key: send 'authorization: Bearer <key>'",
                    reason="MISSING_CREDENTIALS",
                )
            principal = await self._authenticator.authenticate(token)
            if principal is None:
                raise Unauthenticated("the API key is unknown or revoked", reason="INVALID_CREDENTIALS")
            if principal.kind not in kinds:
                raise PermissionDenied(
                    f"a {principal.kind} key may not call {method}",
                    reason="WRONG_PRINCIPAL",
                    metadata={"method": method, "principal": principal.kind, "key_id": principal.key_id},
                )
            return principal

        async def guarded(run: Callable[[], Awaitable[Any]], context: Context) -> Any:
            del context
            token = _principal.set(await admit())
            again = _admission.set(admit)
            try:
                return await run()
            finally:
                _admission.reset(again)
                _principal.reset(token)

        return rewrap(handler, guarded)
