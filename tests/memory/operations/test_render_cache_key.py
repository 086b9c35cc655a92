"""The render cache's key includes each block's write time, not only its id and version.

A store restored from a backup under a running server can bring a block's version number back with
other content; the write time tells the two apart (the ``render_cache`` module's guard). Here two
records carry the same block id and version but different values and write times: the second must
be rendered afresh, never served the first one's text.
"""

from __future__ import annotations

from strata_memory.domain.model import Block, RenderMode
from strata_memory.operations.render_cache import RenderCache
from strata_memory.store.records import BlockRecord


def _record(value: str, updated_us: int) -> BlockRecord:
    block = Block(label="human", value=value, id="block-1", version=3)
    return BlockRecord(block, "tenant-a", created_us=1, updated_us=updated_us)


def test_same_id_and_version_written_at_another_time_is_rendered_afresh() -> None:
    cache = RenderCache()
    before = cache.render_blocks([_record("Name: Ada", 1_000)], RenderMode.STANDARD)
    restored = cache.render_blocks([_record("Name: Grace", 2_000)], RenderMode.STANDARD)
    assert "Ada" in before
    assert "Grace" in restored
    assert "Ada" not in restored
    assert (cache.hits, cache.misses) == (0, 2)


def test_same_id_version_and_write_time_is_reused() -> None:
    cache = RenderCache()
    first = cache.render_blocks([_record("Name: Ada", 1_000)], RenderMode.STANDARD)
    again = cache.render_blocks([_record("Name: Ada", 1_000)], RenderMode.STANDARD)
    assert again == first
    assert (cache.hits, cache.misses) == (1, 1)
