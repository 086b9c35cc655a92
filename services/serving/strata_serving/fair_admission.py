"""Server interceptor: admission by tenant, decided before a request is parsed.

Each method named in the service's rules has a largest request size and, optionally, a
:class:`~strata_serving.fair_share.FairShare` pool. For such a method grpc hands this interceptor the
request's bytes unparsed; the call then

1. is refused, unparsed, when its bytes exceed the method's size (RESOURCE_EXHAUSTED, naming both
   sizes): a 1.7 MB request to a method whose largest valid request is a few KB is never parsed;
2. waits for its tenant's turn in the method's pool, or is refused when its tenant already has
   a full queue there (RESOURCE_EXHAUSTED, TENANT_CONCURRENCY_LIMIT);
3. only then is parsed (bytes that do not parse are INVALID_ARGUMENT) and handled, so parsing is done
   on the tenant's own share.

The tenant is the one :func:`~strata_serving.tenancy.tenant_of` names (the API key's with auth on),
so this interceptor goes after the authentication one; an admin or service key is scheduled as one
more tenant named after its kind. Refusals are counted against the tenant that caused them
(:attr:`AdmissionInterceptor.refused`), and paced by a :class:`RefusalBudget`: a tenant is refused
at once ``burst`` times, then at most ``per_second`` times a second; a refusal past that is answered
only when the tenant's budget has refilled (at most ``max_delay`` later; at most ``max_held`` held per
tenant). Each call costs the server its share of gRPC's per-call work whether it is served or not, so
a client that resends every refusal at once would otherwise take the event loop from every tenant.
Methods with a streamed request, and methods without a rule, pass through untouched. Every call with a
rule notes its tenant in ``activity`` (when given), which the pools' pacing reads: a tenant rests
between its calls in a pool only while another tenant is active (:class:`~strata_serving.fair_share.Pacing`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import grpc

from strata_serving.auth import PrincipalKind, current_principal
from strata_serving.errors import InvalidArgument, ResourceExhausted
from strata_serving.fair_share import Activity, FairShare
from strata_serving.handlers import Context, Handler, drive
from strata_serving.tenancy import tenant_of

if TYPE_CHECKING:  # grpc's classes are generic only in their type stubs
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = grpc.aio.ServerInterceptor


@dataclass(frozen=True)
class MethodRule:
    """How one method is admitted: its largest request in bytes and its pool's name (None: no pool)."""

    max_request_bytes: int
    pool: str | None = None


@dataclass(frozen=True)
class RefusalBudget:
    """How fast one tenant's calls are refused without delay (see the module's docstring)."""

    per_second: float = 20.0
    burst: int = 20
    max_delay: float = 1.0
    max_held: int = 64


MAX_COUNTED_TENANTS = 10_000
"""Tenants with refusal figures kept; past that, new tenants are counted as "(other)"."""


class _Pacing:
    """Per-tenant token buckets of refusals; a tenant whose bucket is full has no entry."""

    def __init__(self, budget: RefusalBudget) -> None:
        self.budget = budget
        self._tokens: dict[str, tuple[float, float]] = {}
        self._held: dict[str, int] = {}

    def delay(self, tenant: str) -> float:
        """Take one refusal from ``tenant``'s bucket; how long to hold that refusal."""
        budget, now = self.budget, time.monotonic()
        tokens, at = self._tokens.get(tenant, (float(budget.burst), now))
        tokens = min(float(budget.burst), tokens + (now - at) * budget.per_second) - 1
        tokens = max(tokens, -budget.max_delay * budget.per_second)
        self._tokens[tenant] = (tokens, now)
        if len(self._tokens) > MAX_COUNTED_TENANTS:
            self._forget_refilled(now)
        return min(budget.max_delay, -tokens / budget.per_second) if tokens < 0 else 0.0

    async def hold(self, tenant: str) -> None:
        wait = self.delay(tenant)
        held = self._held.get(tenant, 0)
        if wait <= 0 or held >= self.budget.max_held:
            return
        self._held[tenant] = held + 1
        try:
            await asyncio.sleep(wait)
        finally:
            left = self._held[tenant] - 1
            if left:
                self._held[tenant] = left
            else:
                del self._held[tenant]

    def _forget_refilled(self, now: float) -> None:
        full = float(self.budget.burst)
        for tenant, (tokens, at) in list(self._tokens.items()):
            if tokens + (now - at) * self.budget.per_second >= full:
                del self._tokens[tenant]


class AdmissionInterceptor(_Interceptor):
    """Applies ``rules`` (full method name -> rule) with ``pools`` (pool name -> pool)."""

    def __init__(
        self,
        rules: Mapping[str, MethodRule],
        pools: Mapping[str, FairShare],
        *,
        refusals: RefusalBudget | None = None,
        activity: Activity | None = None,
    ) -> None:
        unknown = {rule.pool for rule in rules.values() if rule.pool is not None} - set(pools)
        if unknown:
            raise ValueError(f"rules name pools that do not exist: {sorted(unknown)}")
        self._rules = dict(rules)
        self.pools = dict(pools)
        self.refused: dict[str, int] = {}
        """Calls refused here per tenant (too large, or the tenant's queue full)."""
        self._pacing = _Pacing(refusals or RefusalBudget())
        self.activity = activity
        """Where every admitted-or-not call's tenant is noted (the pools' :class:`Pacing` reads it)."""

    async def intercept_service(  # type: ignore[override]  # grpc returns None for unknown methods
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        rule = self._rules.get(handler_call_details.method)
        if handler is None or rule is None or handler.request_streaming:
            return handler
        return self._wrap(handler, handler_call_details.method, rule)

    async def admit(
        self, method: str, rule: MethodRule, raw: bytes, context: Context
    ) -> tuple[str, float | None]:
        """Refuse an oversized request or wait for a slot; returns the tenant holding the slot and
        when it took it (None: the method has no pool)."""
        tenant = _scheduled_as(context)
        if self.activity is not None:
            self.activity.seen(tenant)
        if len(raw) > rule.max_request_bytes:
            await self._refusing(tenant)
            raise ResourceExhausted(
                f"the request is {len(raw):,} bytes; {method} takes at most {rule.max_request_bytes:,}"
            )
        if rule.pool is None:
            return tenant, None
        try:
            return tenant, await self.pools[rule.pool].acquire(tenant)
        except ResourceExhausted:
            await self._refusing(tenant)
            raise

    async def _refusing(self, tenant: str) -> None:
        """Count a refusal against ``tenant`` and hold it as long as its budget says."""
        counted = tenant if tenant in self.refused or len(self.refused) < MAX_COUNTED_TENANTS else "(other)"
        self.refused[counted] = self.refused.get(counted, 0) + 1
        await self._pacing.hold(tenant)

    def _wrap(
        self, handler: grpc.RpcMethodHandler[Any, Any], method: str, rule: MethodRule
    ) -> grpc.RpcMethodHandler[Any, Any]:
        """``handler`` taking the raw request bytes: admitted first, parsed after."""
        deserialize = handler.request_deserializer
        pool = self.pools[rule.pool] if rule.pool is not None else None

        def parse(raw: bytes) -> Any:
            if deserialize is None:
                return raw
            try:
                return deserialize(raw)
            except Exception as error:  # protobuf's DecodeError, or any parser's
                raise InvalidArgument("the request could not be parsed") from error

        async def run(raw: bytes, context: Context, call: Callable[[Any], Awaitable[Any]]) -> Any:
            tenant, started = await self.admit(method, rule, raw, context)
            try:
                return await call(parse(raw))
            finally:
                if pool is not None:
                    pool.release(tenant, started)

        serializer = {"response_serializer": handler.response_serializer}
        if handler.unary_unary is not None:
            unary = cast(Handler, handler.unary_unary)

            async def single(raw: bytes, context: Context) -> Any:
                return await run(raw, context, lambda request: unary(request, context))

            return grpc.unary_unary_rpc_method_handler(single, **serializer)
        if handler.unary_stream is not None:
            streaming = cast(Handler, handler.unary_stream)

            async def stream(raw: bytes, context: Context) -> None:
                await run(raw, context, lambda request: drive(streaming(request, context), context))

            return grpc.unary_stream_rpc_method_handler(stream, **serializer)
        return handler


def _scheduled_as(context: Context) -> str:
    """Whose share a call uses: its tenant, or for an admin or service key, its kind."""
    principal = current_principal()
    if principal is not None and principal.kind is not PrincipalKind.TENANT:
        return f"({principal.kind})"
    return tenant_of(context)
