"""What the outbox sends for a message: its text and, with ``recall_context_turns``, the preceding
dialogue turns of its conversation (``indexing/documents.py``), read from the store at delivery.

The store is a real SQLite file and the worker the real one; RetrievalService is a stand-in that only
records the documents it is sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import agents as agent_rows
from strata_memory.store import index_jobs
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import MessageRecord
from tests.memory.operations.conftest import TENANT, agent_record


class Recording:
    def __init__(self) -> None:
        self.documents: list[rpb.Document] = []

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.documents.extend(documents)

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        return None


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    yield database
    database.close()


def _conversation(db: Database, texts: Sequence[str]) -> list[str]:
    """An agent whose default conversation holds ``texts`` as user messages, with their upsert jobs."""
    with db.writing() as conn:
        agent = agent_rows.insert_agent(conn, dataclasses.replace(agent_record(), id="agent-1"))
        stored = message_rows.append(
            conn,
            [
                MessageRecord(f"message-{i}", TENANT, agent.id, "default", "user", text, created_us=i + 1)
                for i, text in enumerate(texts)
            ],
        )
        index_jobs.enqueue(conn, TENANT, index_jobs.UPSERT, [m.id for m in stored])
    return [m.id for m in stored]


@pytest.mark.parametrize(
    ("turns", "contexts"), [(0, ["", "", ""]), (1, ["", "one", "two"]), (2, ["", "one", "two\none"])]
)
async def test_messages_are_delivered_with_the_configured_preceding_turns(
    db: Database, turns: int, contexts: list[str]
) -> None:
    ids = _conversation(db, ["one", "two", "three"])
    retrieval = Recording()
    worker = OutboxWorker(db, cast(RetrievalConnection, retrieval), context_turns=turns)
    assert await worker.deliver_once() == 3
    sent = {d.id: (d.text, d.context) for d in retrieval.documents}
    assert [sent[i] for i in ids] == list(zip(["one", "two", "three"], contexts, strict=True))
