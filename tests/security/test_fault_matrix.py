"""The crash and outage matrix as tests: every acknowledged write survives, every refusal is clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security import faults


def assert_clean(row: faults.Row) -> None:
    assert row.problems == [], faults.table([row])


@pytest.mark.slow
async def test_kill_9_of_memory_service_under_write_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    row = await faults.memory_kill_9_under_write_load(tmp_path)
    assert_clean(row)
    assert row.acknowledged > 20
    assert row.present >= row.acknowledged


@pytest.mark.slow
async def test_kill_9_of_retrieval_service_during_indexing_catches_up_without_duplicates(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    row = await faults.retrieval_kill_9_during_indexing(tmp_path, tmp_path_factory.mktemp("models"))
    assert_clean(row)
    assert row.present == row.acknowledged == row.attempted


async def test_with_retrieval_down_writes_succeed_and_search_fails_fast(tmp_path: Path) -> None:
    row = await faults.retrieval_down(tmp_path)
    assert_clean(row)
    assert row.present == row.acknowledged == row.attempted
    assert row.refusals == {"UNAVAILABLE": 1}


@pytest.mark.parametrize("kind", ["read-only", "disk full"])
async def test_a_store_that_cannot_write_refuses_clearly_and_stays_intact(tmp_path: Path, kind: str) -> None:
    row = await faults.store_refuses_writes(tmp_path, kind)
    assert_clean(row)
    expected = "UNAVAILABLE" if kind == "read-only" else "RESOURCE_EXHAUSTED"
    assert row.refusals == {expected: row.attempted}
    assert row.acknowledged == row.present == 0


@pytest.mark.parametrize("etags", [False, True], ids=["blind appends", "etag updates"])
async def test_64_concurrent_writers_on_one_block_lose_no_update(tmp_path: Path, etags: bool) -> None:
    row = await faults.concurrent_writers(tmp_path, writers=64, etags=etags)
    assert_clean(row)
    assert row.acknowledged == row.present == 64
    assert set(row.refusals) <= {"ABORTED"}
    if not etags:
        assert row.refusals == {}
