"""File rows (store/files.py) on a real store (SQLite and PostgreSQL): a file is found by its id within
its tenant, never another file of the tenant nor one of another tenant.
"""

from __future__ import annotations

import dataclasses

import pytest

from strata_memory.domain.errors import FileNotFound
from strata_memory.store import agents as agent_rows
from strata_memory.store import files as file_rows
from strata_memory.store.database import Database
from strata_memory.store.records import FileRecord
from tests.memory.store.test_statements import _agent


def _file(file_id: str, name: str, tenant_id: str = "t", agent_id: str = "agent-1") -> FileRecord:
    return FileRecord(
        id=file_id,
        tenant_id=tenant_id,
        agent_id=agent_id,
        directory="docs",
        name=name,
        content=f"the text of {name}",
        description="",
        limit=1000,
        is_open=False,
        created_us=0,
        updated_us=0,
    )


@pytest.fixture
def db(db: Database) -> Database:
    with db.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
        agent_rows.insert_agent(conn, dataclasses.replace(_agent("agent-2"), tenant_id="u"))
        for file in (
            _file("file-a", "a.md"),
            _file("file-b", "b.md"),
            _file("file-u", "u.md", tenant_id="u", agent_id="agent-2"),
        ):
            file_rows.insert_file(conn, file)
    return db


def test_each_file_is_found_by_its_own_id(db: Database) -> None:
    with db.reading() as conn:
        found = [file_rows.get_file(conn, "t", file_id) for file_id in ("file-b", "file-a")]
    assert [(f.id, f.name, f.content) for f in found] == [
        ("file-b", "b.md", "the text of b.md"),
        ("file-a", "a.md", "the text of a.md"),
    ]


@pytest.mark.parametrize(("tenant_id", "file_id"), [("t", "file-u"), ("u", "file-a"), ("t", "file-404")])
def test_a_file_of_another_tenant_or_none_is_not_found(db: Database, tenant_id: str, file_id: str) -> None:
    with db.reading() as conn, pytest.raises(FileNotFound):
        file_rows.get_file(conn, tenant_id, file_id)
