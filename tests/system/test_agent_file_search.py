"""Every message of every shared Letta file, imported with ``wait_searchable``, is found by recall
search (full-text leg, through RetrievalService) with words taken from the file itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from tests.memory.domain.agent_files.shared_files import SHARED, file_bytes, raw_document


def text_of(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
async def test_each_imported_message_is_found_by_its_own_words(memory: MemoryStub, path: Path) -> None:
    document = raw_document(path)
    imported = await memory.ImportAgentFile(
        api.ImportAgentFileRequest(agent_file=file_bytes(path), wait_searchable=True), timeout=120
    )
    searched = 0
    for agent, raw in zip(imported.agents, document["agents"], strict=True):
        for message in raw["messages"]:
            text = text_of(message["content"])
            words = [w for w in text.split() if w.isalpha()][:8]
            if not words:
                continue  # nothing to search for (a tool call without text)
            request = api.SearchMessagesRequest(
                agent_id=agent.id, query=" ".join(words), mode=api.SEARCH_MODE_FTS, limit=10
            )
            hits = (await memory.SearchMessages(request, timeout=60)).hits
            assert text in [h.message.content for h in hits], f"{path.name}: {' '.join(words)!r}"
            searched += 1
    assert searched >= len(document["agents"])
