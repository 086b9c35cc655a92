"""The request_id records of idempotent writes: found within the retention, expired and pruned after;
what a request_id costs an append in statements, and that a repeat writes nothing."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from strata_memory.operations.idempotency import RETENTION_US, RequestPruner
from strata_memory.operations.messages import Messages
from strata_memory.store import schema, write_requests
from strata_memory.store.database import Database
from strata_memory.store.records import DEFAULT_CONVERSATION, now_us
from tests.memory.store.sent import recorded
from tests.memory.store.test_append_statements import Queue, said, statements_sent
from tests.memory.store.test_append_statements import db as seeded

__all__ = ["seeded"]

KEY = ("tenant-a", "AppendMessages", "0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a")


def claim(
    db: Database, *, key: tuple[str, str, str] = KEY, age_us: int = 0, ids: tuple[str, ...] = ("m1",)
) -> write_requests.WriteRequest | None:
    stamp = now_us()
    with db.writing() as conn:
        return write_requests.claim(
            conn,
            *key,
            fingerprint=f"f-{ids[0]}",
            resource_ids=ids,
            created_us=stamp - age_us,
            since_us=stamp - RETENTION_US,
        )


def rows(db: Database) -> list[tuple[str, list[str]]]:
    with db.reading() as conn:
        query = select(schema.write_requests.c.request_id, schema.write_requests.c.resource_ids)
        return [(r, list(i)) for r, i in conn.execute(query.order_by(schema.write_requests.c.created_us))]


def test_the_first_claim_records_the_write_and_a_second_gets_it_back(db: Database) -> None:
    assert claim(db, ids=("m1", "m2")) is None
    again = claim(db, ids=("m3",))
    assert again == write_requests.WriteRequest("f-m1", ("m1", "m2"))
    assert rows(db) == [(KEY[2], ["m1", "m2"])]


def test_the_key_is_tenant_method_and_request_id(db: Database) -> None:
    assert claim(db) is None
    assert claim(db, key=("tenant-b", KEY[1], KEY[2])) is None
    assert claim(db, key=(KEY[0], "CreatePassages", KEY[2])) is None
    assert len(rows(db)) == 3


def test_an_expired_record_is_taken_over_by_the_next_claim(db: Database) -> None:
    assert claim(db, age_us=RETENTION_US + 1_000_000) is None
    assert claim(db, ids=("m9",)) is None
    assert rows(db) == [(KEY[2], ["m9"])]
    assert claim(db, ids=("m10",)) == write_requests.WriteRequest("f-m9", ("m9",))


async def test_the_pruner_deletes_only_records_past_the_retention(db: Database) -> None:
    recent = "1b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"
    claim(db, age_us=RETENTION_US + 1_000_000)
    claim(db, key=(KEY[0], KEY[1], recent), age_us=RETENTION_US // 2)
    assert await RequestPruner(db).prune() == 1
    assert rows(db) == [(recent, ["m1"])]


async def test_a_request_id_adds_one_statement_and_a_repeat_writes_nothing(seeded: Database) -> None:
    messages = Messages(seeded, Queue())
    request_id = "2b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"
    with statements_sent(seeded) as sent:
        first = await messages.append(
            "t", "agent-a", DEFAULT_CONVERSATION, said("one"), request_id=request_id
        )
    # the record, then the five without
    assert sent == ["INSERT", "UPDATE", "SELECT", "INSERT", "INSERT", "UPDATE"]
    with statements_sent(seeded) as sent:
        again = await messages.append(
            "t", "agent-a", DEFAULT_CONVERSATION, said("one"), request_id=request_id
        )
    assert sent == [
        "INSERT",
        "SELECT",
        "SELECT",
        "SELECT",
        "UPDATE",
    ]  # no record inserted, it, the messages, their jobs, the quota check (store/quotas.py)
    assert again.items == first.items
    assert again.job_ids == first.job_ids


async def test_duplicates_written_at_once_apply_once(seeded: Database) -> None:
    """SQLite: the appends share one transaction (a savepoint each) and the later ones find the first's
    claim in it; PostgreSQL: separate transactions, the later claims wait for the first's commit."""
    messages = Messages(seeded, Queue())
    request_id = "3b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"
    with recorded((seeded._writer,), lambda s: s if s.startswith("SAVEPOINT") else None) as savepoints:
        written = await asyncio.gather(
            *(
                messages.append(
                    "t", "agent-a", DEFAULT_CONVERSATION, said("one", "two"), request_id=request_id
                )
                for _ in range(6)
            )
        )
    assert len(savepoints) == (6 if seeded.is_sqlite else 0)  # SQLite: one shared transaction
    assert {tuple(w.items) for w in written} == {tuple(written[0].items)}
    with seeded.reading() as conn:
        stored = conn.execute(select(schema.messages.c.id).order_by(schema.messages.c.sequence)).scalars()
        assert list(stored) == [m.id for m in written[0].items]
