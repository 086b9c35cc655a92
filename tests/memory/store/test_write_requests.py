"""The request_id records of idempotent writes: found within the retention, expired and pruned after;
what a request_id costs an append in statements, and that a repeat writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from strata_memory.operations.idempotency import RETENTION_US, RequestPruner
from strata_memory.operations.messages import Messages
from strata_memory.store import schema, write_requests
from strata_memory.store.database import Database
from strata_memory.store.records import DEFAULT_CONVERSATION, now_us
from tests.memory.store.test_append_statements import Queue, said, statements_sent
from tests.memory.store.test_append_statements import db as seeded

__all__ = ["seeded"]

KEY = ("tenant-a", "AppendMessages", "0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a")


def put(
    db: Database, *, key: tuple[str, str, str] = KEY, age_us: int = 0, ids: tuple[str, ...] = ("m1",)
) -> None:
    with db.writing() as conn:
        write_requests.record(
            conn, *key, fingerprint="f" * 64, resource_ids=ids, created_us=now_us() - age_us
        )


def rows(db: Database) -> int:
    with db.reading() as conn:
        return int(conn.execute(select(func.count()).select_from(schema.write_requests)).scalar_one())


def test_a_record_is_found_by_its_whole_key_within_the_retention(db: Database) -> None:
    put(db, ids=("m1", "m2"))
    since = now_us() - RETENTION_US
    with db.writing() as conn:
        found = write_requests.find(conn, *KEY, since_us=since)
        assert found is not None
        assert found.resource_ids == ("m1", "m2")
        assert write_requests.find(conn, "tenant-b", KEY[1], KEY[2], since_us=since) is None
        assert write_requests.find(conn, KEY[0], "CreatePassages", KEY[2], since_us=since) is None


def test_a_second_record_of_one_key_is_refused_by_the_store(db: Database) -> None:
    put(db)
    with pytest.raises(IntegrityError):
        put(db)
    assert rows(db) == 1


def test_an_expired_record_counts_as_absent_and_is_replaced(db: Database) -> None:
    put(db, age_us=RETENTION_US + 1_000_000)
    with db.writing() as conn:
        assert write_requests.find(conn, *KEY, since_us=now_us() - RETENTION_US) is None
    assert rows(db) == 0
    put(db, ids=("m9",))
    assert rows(db) == 1


async def test_the_pruner_deletes_only_records_past_the_retention(db: Database) -> None:
    put(db, age_us=RETENTION_US + 1_000_000)
    put(
        db,
        key=("tenant-a", "AppendMessages", "1b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"),
        age_us=RETENTION_US // 2,
    )
    assert await RequestPruner(db).prune() == 1
    assert rows(db) == 1


async def test_a_request_id_adds_a_lookup_and_an_insert_and_a_repeat_only_reads(seeded: Database) -> None:
    messages = Messages(seeded, Queue())
    request_id = "2b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"
    with statements_sent(seeded) as sent:
        first = await messages.append(
            "t", "agent-a", DEFAULT_CONVERSATION, said("one"), request_id=request_id
        )
    assert sent == ["SELECT", "UPDATE", "SELECT", "INSERT", "INSERT", "INSERT"]  # without: the middle four
    with statements_sent(seeded) as sent:
        again = await messages.append(
            "t", "agent-a", DEFAULT_CONVERSATION, said("one"), request_id=request_id
        )
    assert sent == ["SELECT", "SELECT", "SELECT"]  # the record, the messages, their pending index jobs
    assert again.items == first.items
    assert again.job_ids == first.job_ids
