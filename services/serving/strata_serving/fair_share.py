"""Fair admission to one costly resource that tenants share (searches, writes, ...).

A :class:`FairShare` pool admits at most ``capacity`` calls at once over all tenants and at most
``share`` of one tenant: a bounded share even when no other tenant waits, since capacity lent to a
flooding tenant would be held by it when a quiet tenant's call arrives. A call that cannot start
waits in its tenant's queue; a tenant with ``queue`` calls waiting already is refused at once
(RESOURCE_EXHAUSTED, reason ``TENANT_CONCURRENCY_LIMIT``, naming the tenant and the limit). When a
call ends its slot goes to the next waiting tenant below its share, in turn (round robin), weighted
by ``weights``: a tenant of weight 2 gets two turns where one of weight 1 gets one. So a tenant with
one waiting call waits for at most one call of each other tenant, however many they queued. A waiting
call whose client gives up (deadline, cancel) leaves the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from strata_serving.errors import ResourceExhausted


@dataclass(frozen=True)
class PoolLimits:
    """``capacity`` calls at once in all, ``share`` of one tenant, ``queue`` waiting per tenant."""

    capacity: int
    share: int
    queue: int

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.share < 1 or self.queue < 0:
            raise ValueError("a pool needs capacity >= 1, share >= 1 and queue >= 0")


class FairShare:
    """One pool; ``async with pool.slot(tenant):`` runs a call when it is the tenant's turn."""

    def __init__(self, what: str, limits: PoolLimits, *, weights: Mapping[str, int] | None = None) -> None:
        self.what = what
        self.limits = limits
        self._weights = dict(weights or {})
        self._free = limits.capacity
        self._running: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()
        self._credit: dict[str, int] = {}
        self.refused: dict[str, int] = {}
        """Calls refused per tenant since start (the queue was full)."""

    def running(self, tenant: str) -> int:
        return self._running.get(tenant, 0)

    def waiting(self, tenant: str) -> int:
        return len(self._waiting.get(tenant, ()))

    @contextlib.asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[None]:
        await self.acquire(tenant)
        try:
            yield
        finally:
            self.release(tenant)

    async def acquire(self, tenant: str) -> None:
        """Wait for ``tenant``'s turn and take a slot (ResourceExhausted when its queue is full);
        :meth:`release` gives it back."""
        if self._free > 0 and self.running(tenant) < self.limits.share and not self.waiting(tenant):
            self._take(tenant)
            return
        queue = self._waiting.setdefault(tenant, deque())
        if len(queue) >= self.limits.queue:
            if not queue:
                del self._waiting[tenant]
            self.refused[tenant] = self.refused.get(tenant, 0) + 1
            running = self.running(tenant)
            why = (
                f"tenant {tenant!r} already has {running} {self.what} running and {len(queue)} waiting "
                f"(at most {self.limits.share} and {self.limits.queue})"
                if running >= self.limits.share
                else f"the service runs {self.limits.capacity} {self.what} at once and tenant "
                f"{tenant!r} has {len(queue)} waiting (at most {self.limits.queue})"
            )
            raise ResourceExhausted(
                f"{why}; retry with backoff",
                reason="TENANT_CONCURRENCY_LIMIT",
                metadata={"tenant": tenant, "limit": self.limits.share + self.limits.queue},
            )
        if tenant not in self._turns:
            self._turns.append(tenant)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release(tenant)  # granted as it was cancelled: hand the slot on
            else:
                self._forget(tenant, turn)
            raise

    def _take(self, tenant: str) -> None:
        self._free -= 1
        self._running[tenant] = self.running(tenant) + 1

    def release(self, tenant: str) -> None:
        self._free += 1
        left = self._running[tenant] - 1
        if left:
            self._running[tenant] = left
        else:
            del self._running[tenant]
        self._dispatch()

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self._waiting[tenant]
                self._credit.pop(tenant, None)
                with contextlib.suppress(ValueError):
                    self._turns.remove(tenant)

    def _dispatch(self) -> None:
        """Grant free slots in turn to waiting tenants below their share."""
        while self._free > 0 and (tenant := self._next_turn()) is not None:
            self._grant(tenant)

    def _next_turn(self) -> str | None:
        """The next waiting tenant below its share, moved to the head of the turns (None: none)."""
        for _ in range(len(self._turns)):
            if self.running(self._turns[0]) < self.limits.share:
                return self._turns[0]
            self._turns.rotate(-1)
        return None

    def _grant(self, tenant: str) -> None:
        queue = self._waiting[tenant]
        self._take(tenant)
        queue.popleft().set_result(None)
        credit = self._credit.get(tenant, self._weights.get(tenant, 1)) - 1
        if not queue:
            del self._waiting[tenant]
            self._credit.pop(tenant, None)
            self._turns.popleft()
        elif credit <= 0:
            self._credit.pop(tenant, None)
            self._turns.rotate(-1)
        else:
            self._credit[tenant] = credit
