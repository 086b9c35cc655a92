"""Idempotent writes (AIP-155): a write sent with a request_id is applied once, however often it is sent.

A client whose response was lost after the server committed (a reset connection, a proxy timeout, a
drained pod) sends the same request again with the same ``request_id``. Within ``RETENTION_US`` (24
hours) of the first call, the same tenant's retry to the same method with the same request stores
nothing and gets the first call's result back (the resources as the store holds them now: one
deleted since is left out). The same ``request_id`` with another request is refused with
INVALID_ARGUMENT, reason ``REQUEST_ID_REUSED``, and changes nothing. Which tenant sent it is part of
the key, so one tenant's ids never meet another's; a request_id is checked (a UUID in its
36-character text form) before any store work. The record is written first in the write's own
transaction (``store/write_requests.py`` tells how concurrent duplicates are kept apart), so it
survives restarts and is shared by every replica on one PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from strata_memory.store import write_requests
from strata_memory.store.database import Database
from strata_memory.store.records import now_us
from strata_serving.errors import InvalidArgument, StrataError

RETENTION_US = 24 * 3600 * 1_000_000
"""How long a request_id is remembered: a retry later than this is a new write."""
PRUNE_EVERY_SECONDS = 3600.0
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
log = logging.getLogger("strata.idempotency")


class RequestIdReused(InvalidArgument):
    default_reason = "REQUEST_ID_REUSED"


def checked_request_id(request_id: str) -> str:
    """The request_id in lower case; INVALID_ARGUMENT unless it is a UUID in its 36-character form."""
    normal = request_id.lower()
    if not _UUID.fullmatch(normal):
        shown = request_id if len(request_id) <= 40 else f"{request_id[:40]}… ({len(request_id)} characters)"
        raise InvalidArgument.field(
            "request_id", f"must be a UUID such as 0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a, got {shown!r}"
        )
    return normal


def fingerprint(*parts: Any) -> str:
    """A SHA-256 of the request's content (dataclasses included), equal for equal requests."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return dict(value)  # metadata mappings

    text = json.dumps(parts, sort_keys=True, default=plain, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Once:
    """One write's request_id: ``claim`` records this call, or finds the earlier call that made it."""

    tenant_id: str
    method: str
    request_id: str
    fingerprint: str

    @classmethod
    def of(cls, tenant_id: str, method: str, request_id: str, *request: Any) -> Once | None:
        """None without a request_id (no deduplication); raises INVALID_ARGUMENT for a bad one."""
        if not request_id:
            return None
        return cls(tenant_id, method, checked_request_id(request_id), fingerprint(*request))

    def claim(self, conn: Connection, resource_ids: Sequence[str]) -> tuple[str, ...] | None:
        """Record this call as the one that stores ``resource_ids`` and return None, or return the ids
        an earlier call with this request_id stored (raising RequestIdReused if its request differed).
        Called first in the write's transaction, before anything is stored."""
        stamp = now_us()
        earlier = write_requests.claim(
            conn,
            self.tenant_id,
            self.method,
            self.request_id,
            fingerprint=self.fingerprint,
            resource_ids=resource_ids,
            created_us=stamp,
            since_us=stamp - RETENTION_US,
        )
        if earlier is None:
            return None
        if earlier.fingerprint != self.fingerprint:
            raise RequestIdReused(
                f"request_id {self.request_id} was sent to {self.method} before with another request; "
                "a retry must repeat the first request exactly, and a new request needs a new request_id",
                metadata={"request_id": self.request_id, "method": self.method},
                field_violations=[("request_id", "was used before by a different request")],
            )
        return earlier.resource_ids


def in_order(ids: Sequence[str], found: Sequence[Any]) -> list[Any]:
    """``found`` (records with an ``id``) in the order of ``ids``; ids no longer stored are left out."""
    by_id = {item.id: item for item in found}
    return [by_id[i] for i in ids if i in by_id]


class RequestPruner:
    """Deletes request records past ``RETENTION_US``, once at start and then every hour."""

    def __init__(self, db: Database, *, every_seconds: float = PRUNE_EVERY_SECONDS) -> None:
        self._db = db
        self._every = every_seconds
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="strata-request-pruner")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def prune(self) -> int:
        before = now_us() - RETENTION_US
        return await self._db.write(lambda conn: write_requests.prune(conn, before_us=before))

    async def _run(self) -> None:
        while True:
            try:
                pruned = await self.prune()
                if pruned:
                    log.info("pruned %d request_id records older than 24 h", pruned)
            except StrataError as failure:  # the store is down or full: try again next time
                log.warning("pruning request_id records failed: %s", failure)
            await asyncio.sleep(self._every)
