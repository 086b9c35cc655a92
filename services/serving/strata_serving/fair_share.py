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

With :class:`Pacing`, a tenant also rests between calls while other tenants are active (any of them
seen within ``window`` by the shared :class:`Activity`): when its call ends after ``d`` seconds, the
share that call held stays the tenant's, unused, for ``d * (1 - duty) / duty`` more (at most
``max_rest``), while the pool's capacity is free for others. A tenant that keeps its share busy call
after call (a flood) then holds it at most ``duty`` of the time, leaving the process (its event loop,
the GIL, the store's writer lock) idle between its calls for the others' calls; one whose calls in
a pool are further apart than their rest (an interactive client mixing reads, searches and edits)
never waits for it. A tenant alone never rests. A rest delays, it never refuses: a call held back
only by its tenant's resting share waits for it even in a pool that queues nothing (one call per
resting share, so running and waiting calls stay within ``share + queue``). This is not
work-conserving, on purpose: on a process with one event loop and one SQLite writer, a running call
delays every other tenant's call whatever the pool says (measured by ``bench.tenant_isolation``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
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


@dataclass(frozen=True)
class Pacing:
    """Under contention a tenant's share is busy at most ``duty`` of the time (see the module)."""

    duty: float = 0.5
    window: float = 1.0
    """Other tenants count as active for this long after their last call (seconds)."""
    max_rest: float = 1.0
    """The longest rest after one call (seconds): a minute-long call does not rest a minute."""

    def __post_init__(self) -> None:
        if not 0 < self.duty <= 1 or self.window < 0 or self.max_rest < 0:
            raise ValueError("pacing needs 0 < duty <= 1, window >= 0 and max_rest >= 0")

    def rest(self, took: float) -> float:
        """How long a call that took ``took`` seconds keeps its share unused afterwards."""
        return min(self.max_rest, max(0.0, took) * (1 - self.duty) / self.duty)


class Activity:
    """When tenants were last seen; :meth:`others` asks whether another tenant was, recently.

    O(1) in tenants: it keeps the last tenant seen and the last one seen before it that differs."""

    def __init__(self) -> None:
        self._last: tuple[str, float] | None = None
        self._before: tuple[str, float] | None = None

    def seen(self, tenant: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._last is not None and self._last[0] != tenant:
            self._before = self._last
        self._last = (tenant, now)

    def others(self, tenant: str, within: float, now: float | None = None) -> bool:
        """Whether a tenant other than ``tenant`` was seen in the last ``within`` seconds."""
        now = time.monotonic() if now is None else now
        other = self._last if self._last is not None and self._last[0] != tenant else self._before
        return other is not None and now - other[1] <= within


class FairShare:
    """One pool; ``async with pool.slot(tenant):`` runs a call when it is the tenant's turn."""

    def __init__(
        self,
        what: str,
        limits: PoolLimits,
        *,
        weights: Mapping[str, int] | None = None,
        pacing: Pacing | None = None,
        activity: Activity | None = None,
    ) -> None:
        self.what = what
        self.limits = limits
        self.pacing = pacing
        self.activity = activity if activity is not None else Activity()
        self._resting: dict[str, list[float]] = {}
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

    def resting(self, tenant: str) -> int:
        """Shares of ``tenant`` kept unused now after its calls (:class:`Pacing`)."""
        rests = self._resting.get(tenant)
        if not rests:
            return 0
        now = time.monotonic()
        rests[:] = [until for until in rests if until > now]
        if not rests:
            del self._resting[tenant]
        return len(rests)

    @contextlib.asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[None]:
        started = await self.acquire(tenant)
        try:
            yield
        finally:
            self.release(tenant, started)

    async def acquire(self, tenant: str) -> float:
        """Wait for ``tenant``'s turn and take a slot (ResourceExhausted when its queue is full);
        returns when it started (``time.monotonic()``), for :meth:`release`, which gives it back."""
        self.activity.seen(tenant)
        if self._free > 0 and self._below_share(tenant) and not self.waiting(tenant):
            self._take(tenant)
            return time.monotonic()
        queue = self._waiting.setdefault(tenant, deque())
        # A share kept unused by a rest (Pacing) is a delay, not a refusal: a call may wait for it
        # beyond the queue bound, one per resting share (running + waiting stays within share + queue).
        rested = min(self.resting(tenant), self.limits.share - self.running(tenant))
        if len(queue) >= self.limits.queue + rested:
            if not queue:
                del self._waiting[tenant]
            self.refused[tenant] = self.refused.get(tenant, 0) + 1
            raise ResourceExhausted(
                f"{self._why_refused(tenant, len(queue))}; retry with backoff",
                reason="TENANT_CONCURRENCY_LIMIT",
                metadata={"tenant": tenant, "limit": self.limits.share + self.limits.queue},
            )
        if tenant not in self._turns:
            self._turns.append(tenant)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
            return time.monotonic()
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release(tenant)  # granted as it was cancelled: hand the slot on
            else:
                self._forget(tenant, turn)
            raise

    def _why_refused(self, tenant: str, waiting: int) -> str:
        running = self.running(tenant)
        if running >= self.limits.share:
            return (
                f"tenant {tenant!r} already has {running} {self.what} running and {waiting} waiting "
                f"(at most {self.limits.share} and {self.limits.queue})"
            )
        if self._free <= 0:
            return (
                f"the service runs {self.limits.capacity} {self.what} at once and tenant {tenant!r} "
                f"has {waiting} waiting (at most {self.limits.queue})"
            )
        return (
            f"tenant {tenant!r} has {waiting} {self.what} waiting for its share (at most "
            f"{self.limits.queue}, and one more while its share rests after its last call)"
        )

    def _take(self, tenant: str) -> None:
        self._free -= 1
        self._running[tenant] = self.running(tenant) + 1

    def release(self, tenant: str, started: float | None = None) -> None:
        """Give back a slot ``tenant`` took at ``started`` (None: no rest follows, see :class:`Pacing`)."""
        self._free += 1
        left = self._running[tenant] - 1
        if left:
            self._running[tenant] = left
        else:
            del self._running[tenant]
        if self.pacing is not None and started is not None:
            self._rest(self.pacing, tenant, time.monotonic() - started)
        self._dispatch()

    def _rest(self, pacing: Pacing, tenant: str, took: float) -> None:
        rest = pacing.rest(took)
        if rest <= 0 or not self.activity.others(tenant, pacing.window):
            return
        self._resting.setdefault(tenant, []).append(time.monotonic() + rest)
        asyncio.get_running_loop().call_later(rest, self._dispatch)

    def _below_share(self, tenant: str) -> bool:
        return self.running(tenant) + self.resting(tenant) < self.limits.share

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
            if self._below_share(self._turns[0]):
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
