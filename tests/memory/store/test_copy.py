"""``python -m strata_memory.store.copy`` (store/copy.py's ``main``): a SQLite store copied into an empty
store of each backend prints every table's counts and exits 0; a second copy into the now full store is
refused with exit 2 and nothing written. tests/system/test_move_to_postgres.py moves a served store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_memory.domain.model import Block
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store.copy import main
from strata_memory.store.database import Database
from tests.memory.store.test_statements import _agent


@pytest.fixture
def source(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/source.sqlite3"
    database = Database(url)
    database.migrate()
    with database.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
        stored = block_rows.insert_block(conn, "t", Block(label="human", id="block-1"), source="t", actor="t")
        block_rows.attach(conn, "agent-1", stored.block)
    database.close()
    return url


def _counts(printed: str) -> dict[str, tuple[str, ...]]:
    """The table lines of the copy's report: table -> (source, target, mark)."""
    rows = [line.split() for line in printed.splitlines()[1:-1]]
    return {row[0]: tuple(row[1:]) for row in rows}


def test_a_store_is_copied_into_an_empty_one_and_every_count_printed(
    source: str, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--from", source, "--to", store_url]) == 0
    printed = capsys.readouterr()
    counts = _counts(printed.out)
    assert printed.out.splitlines()[0].split() == ["table", "source", "target"]
    assert (counts["agents"], counts["blocks"], counts["messages"]) == (
        ("1", "1", "ok"),
        ("1", "1", "ok"),
        ("0", "0", "ok"),
    )
    assert {mark for _, _, mark in counts.values()} == {"ok"}
    assert printed.out.splitlines()[-1].startswith("copied: every count matches")
    assert printed.err == ""

    copied = Database(store_url)
    try:
        with copied.reading() as conn:
            assert [r.block.id for r in block_rows.agent_blocks(conn, "agent-1")] == ["block-1"]
    finally:
        copied.close()


def test_a_copy_into_a_store_that_holds_rows_is_refused(
    source: str, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--from", source, "--to", store_url]) == 0
    capsys.readouterr()
    assert main(["--from", source, "--to", store_url]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("refused: the target store is not empty (rows in ")
    assert "agents" in printed.err
