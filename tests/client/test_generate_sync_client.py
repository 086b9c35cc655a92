"""The committed sync client is exactly what the generator makes from the async one."""

from __future__ import annotations

import pytest

from scripts import generate_sync_client as generator


def test_committed_sync_modules_are_up_to_date() -> None:
    for path, expected in generator.generated_files().items():
        assert path.read_text(encoding="utf-8") == expected, f"{path.name} drifted: run 'make client'"


def test_transform_rewrites_async_spellings() -> None:
    source = '''"""Async docstring."""
from collections.abc import AsyncIterator
from strata.client.async_base import AsyncClientBase


class AsyncThing(AsyncClientBase):
    async def __aenter__(self) -> AsyncThing:
        return self

    async def each(self, channel: grpc.aio.Channel) -> AsyncIterator[int]:
        async with open_it() as handle:
            async for item in handle:
                yield await item
        await channel.close(grace=None)
'''
    out = generator.transform(source, "async_thing.py")
    assert "Async docstring" not in out
    assert "from async_thing.py - do not edit" in out
    for expected in (
        "from collections.abc import Iterator\n",
        "from strata.client.sync_base import ClientBase\n",
        "class Thing(ClientBase):",
        "def __enter__(self) -> Thing:",
        "def each(self, channel: grpc.Channel) -> Iterator[int]:",
        "with open_it() as handle:",
        "for item in handle:",
        "yield item",
        "channel.close()",
    ):
        assert expected in out


def test_transform_refuses_what_it_cannot_translate() -> None:
    with pytest.raises(ValueError, match="no sync spelling for 'aio'"):
        generator.transform("import grpc\nx = aio.thing\n", "async_x.py")
