"""What a store refusal means to a caller: the write failures of both backends as Strata's errors,
and which PostgreSQL conflicts a re-run of the transaction resolves (``database.Database`` re-runs).

Nothing a store refused was changed, so every error here says "the write was not made". A full disk
is RESOURCE_EXHAUSTED, a store that cannot take writes or cannot be reached UNAVAILABLE (retry), a
conflict that outlasted the re-runs ABORTED (retry), and text PostgreSQL cannot hold
INVALID_ARGUMENT: never an INTERNAL for input or a server going away.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError

from strata_serving.errors import Aborted, InvalidArgument, ResourceExhausted, StrataError, Unavailable

RERUN_SQLSTATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout
QUERY_CANCELED = "57014"  # statement_timeout (or the call's deadline, store.postgres_session)
IDLE_IN_TRANSACTION_TIMEOUT = "25P03"  # this session sat idle in a transaction and was ended
UNIQUE_VIOLATION = "23505"
MAX_RUNS = 8
"""Runs of a write transaction that keeps meeting a concurrent conflict before it is ABORTED."""


def sqlstate(failure: DBAPIError) -> str:
    return str(getattr(failure.orig, "sqlstate", "") or "")


def worth_rerunning(failure: DBAPIError, run: int) -> bool:
    """A PostgreSQL conflict another transaction caused, that running ``work`` again resolves.

    A unique violation is re-run once: the second run's checks see the row that won the race.
    """
    state = sqlstate(failure)
    if state in RERUN_SQLSTATES:
        return run < MAX_RUNS
    return isinstance(failure, IntegrityError) and state == UNIQUE_VIOLATION and run == 1


class StoreFull(ResourceExhausted):
    default_reason = "STORE_FULL"


class StoreUnavailable(Unavailable):
    default_reason = "STORE_UNAVAILABLE"


def storage_failure(failure: DBAPIError) -> StrataError | None:
    """A clear status for a write the store refused (nothing was changed), or None.

    SQLite reports a full disk as SQLITE_FULL, a read-only file or folder as SQLITE_READONLY*, a
    failing disk as SQLITE_IOERR*, and a lock held past ``busy_timeout`` as SQLITE_BUSY. PostgreSQL
    reports by SQLSTATE (see :func:`postgres_failure`).
    """
    if not isinstance(failure.orig, sqlite3.Error):
        return postgres_failure(failure)
    name = str(getattr(failure.orig, "sqlite_errorname", ""))
    if name == "SQLITE_FULL":
        return StoreFull("the memory store's disk is full: the write was not made; free space and retry")
    if name.startswith(("SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_BUSY")):
        return StoreUnavailable(
            f"the memory store cannot take writes ({name}): the write was not made; "
            "check that the data folder is writable and retry",
            metadata={"sqlite_error": name},
        )
    return None


class StoreConflict(Aborted):
    default_reason = "STORE_CONFLICT"


class TextNotStorable(InvalidArgument):
    default_reason = "TEXT_NOT_STORABLE"


def postgres_failure(failure: DBAPIError) -> StrataError | None:
    """PostgreSQL's refusals as Strata's errors: never an INTERNAL for input or a server going away.

    Input PostgreSQL cannot hold (a NUL character, which SQLite stores) is INVALID_ARGUMENT until the
    domain refuses it on both backends; a deadlock or serialisation failure that outlasted the re-runs
    is ABORTED (retry), and so is a row lock held by another transaction past ``lock_timeout``; a full
    disk is RESOURCE_EXHAUSTED; a server that is down, restarting, out of connections or shutting down,
    a statement cancelled by ``statement_timeout`` and a session ended for idling in a transaction are
    UNAVAILABLE (retryable).
    """
    state = sqlstate(failure)
    if isinstance(failure, DataError) and "NUL" in str(failure.orig):
        return TextNotStorable(
            "text contains a NUL character (U+0000), which the PostgreSQL store cannot hold: "
            "the write was not made; remove it and retry"
        )
    if state in RERUN_SQLSTATES:  # still conflicting after every re-run (``worth_rerunning``)
        return StoreConflict(
            f"the memory store kept failing this write for concurrent writes (sqlstate {state}) after "
            f"{MAX_RUNS} tries: the write was not made; retry",
            metadata={"sqlstate": state},
        )
    if state == LOCK_NOT_AVAILABLE:
        return StoreConflict(
            "a row this write needs stayed locked by another transaction past the store's lock_timeout: "
            "the write was not made; retry",
            metadata={"sqlstate": state},
        )
    if state == "53100":
        return StoreFull("the memory store's disk is full: the write was not made; free space and retry")
    if state in (QUERY_CANCELED, IDLE_IN_TRANSACTION_TIMEOUT) or (
        isinstance(failure, OperationalError) and (not state or state.startswith(("08", "53", "57P")))
    ):
        return StoreUnavailable(
            "the memory store (PostgreSQL) cannot be reached, is not taking work, or did not finish in "
            "time (statement_timeout or the call's deadline): the write was not made; retry",
            metadata={"sqlstate": state or "connection"},
        )
    return None
