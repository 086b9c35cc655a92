"""A per-tenant concurrency limit, so one noisy tenant cannot occupy a shared, costly resource.

Choice: refuse rather than queue. A call beyond a tenant's limit fails at once with
RESOURCE_EXHAUSTED (reason ``TENANT_CONCURRENCY_LIMIT``); the client backs off and retries. Queueing
would hide overload behind growing latency and hold memory for every waiting request, while other
tenants' calls are never refused or slowed by it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from strata_serving.errors import ResourceExhausted


class TenantConcurrency:
    """At most ``limit`` calls in flight per tenant (0 disables the limit)."""

    def __init__(self, limit: int, *, what: str) -> None:
        if limit < 0:
            raise ValueError("the per-tenant concurrency limit must be >= 0")
        self.limit = limit
        self.what = what
        self._in_flight: dict[str, int] = {}

    def in_flight(self, tenant: str) -> int:
        return self._in_flight.get(tenant, 0)

    @contextlib.asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[None]:
        if not self.limit:
            yield
            return
        count = self._in_flight.get(tenant, 0)
        if count >= self.limit:
            raise ResourceExhausted(
                f"tenant {tenant!r} already has {count} {self.what} in flight (limit {self.limit}); "
                "retry with backoff",
                reason="TENANT_CONCURRENCY_LIMIT",
                metadata={"tenant": tenant, "limit": self.limit},
            )
        self._in_flight[tenant] = count + 1
        try:
            yield
        finally:
            remaining = self._in_flight[tenant] - 1
            if remaining:
                self._in_flight[tenant] = remaining
            else:
                del self._in_flight[tenant]
