"""PostgreSQL's time limits on a replica's sessions, so one stuck replica cannot hold the others.

Every connection a replica opens carries three limits in its start-up packet (``options``, so no
extra round trip):

- ``lock_timeout``: a statement waiting for a row lock longer than this fails (SQLSTATE 55P03); the
  write is ABORTED with STORE_CONFLICT (retry) instead of queueing without end behind a holder.
- ``statement_timeout``: no statement runs longer than this (57014).
- ``idle_in_transaction_session_timeout``: PostgreSQL ends a session that sits inside a transaction
  sending nothing for this long, and so releases its locks. A replica whose link to PostgreSQL froze
  mid-transaction holds the other replicas' writes at most this long; its own transaction is rolled back.

A transaction run for a served call also gets ``SET LOCAL statement_timeout`` to what the call's
deadline has left, when that is shorter: a statement (or a lock wait) the caller no longer waits for is
cancelled at the deadline, and the store thread that ran it is free for the next call. 0 means no limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import make_url
from sqlalchemy.engine import Connection

from strata_serving.propagation import remaining_seconds

MIN_STATEMENT_MS = 1
"""A statement whose call's deadline has already passed still gets 1 ms (0 would mean no limit)."""


@dataclass(frozen=True)
class SessionLimits:
    """The limits of every PostgreSQL session of a replica, in seconds (0: no limit)."""

    lock_seconds: float = 10.0
    statement_seconds: float = 30.0
    idle_in_transaction_seconds: float = 10.0

    def options(self) -> str:
        """The ``-c name=value`` settings sent when a session starts."""
        return " ".join(
            f"-c{name}={_ms(seconds)}"
            for name, seconds in (
                ("lock_timeout", self.lock_seconds),
                ("statement_timeout", self.statement_seconds),
                ("idle_in_transaction_session_timeout", self.idle_in_transaction_seconds),
            )
        )

    def session_url(self, url: str) -> str:
        """``url`` with the limits added to its ``options`` (after any it already has)."""
        parsed = make_url(url)
        given = parsed.query.get("options", "")
        given = given if isinstance(given, str) else " ".join(given)
        options = f"{given} {self.options()}".strip()
        return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)

    def bound_to_deadline(self, connection: Connection) -> None:
        """Shorten this transaction's ``statement_timeout`` to what the current call has left, if less."""
        left = remaining_seconds()
        if left is None:
            return
        bound = max(MIN_STATEMENT_MS, int(left * 1000))
        if self.statement_seconds and bound >= _ms(self.statement_seconds):
            return
        connection.exec_driver_sql(f"SET LOCAL statement_timeout = {bound}")

    @staticmethod
    def lift(connection: Connection) -> None:
        """No limit for the rest of this transaction: a replica waiting for another's migration (an
        advisory lock) waits as long as that migration takes."""
        for name in ("lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout"):
            connection.exec_driver_sql(f"SET LOCAL {name} = 0")


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))
