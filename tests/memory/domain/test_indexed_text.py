"""What RetrievalService indexes for a message: own text, speaker name, preceding turns."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.documents import (
    MAX_CONTEXT_CHARS,
    indexed_text,
    message_document,
    message_text,
)
from strata_memory.store.records import EPOCH, MessageRecord, ToolCallRecord

SAID_US = int(datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp() * 1_000_000)
"""When the test messages were said: Monday 8 May 2023."""


def message(content: str, *, name: str = "", role: str = "user", seq: int = 1) -> MessageRecord:
    return MessageRecord(
        created_us=SAID_US,
        id=f"message-{seq}",
        tenant_id="t",
        agent_id="agent-1",
        conversation_id="default",
        role=role,
        content=content,
        name=name,
        sequence=seq,
    )


def test_the_speaker_name_prefixes_the_text_and_tool_calls_are_searchable() -> None:
    said = MessageRecord(
        id="message-9",
        tenant_id="t",
        agent_id="a",
        conversation_id="default",
        role="assistant",
        content="",
        name="Sam",
        tool_calls=(ToolCallRecord("c1", "send_message", '{"message": "see you Friday"}'),),
    )
    assert message_text(said) == "Sam: see you Friday"
    assert message_text(message("hello")) == "hello"


def test_without_context_the_indexed_text_is_the_message_text() -> None:
    alone = message("Yes, last Saturday!", name="Mel")
    assert indexed_text(alone) == "Mel: Yes, last Saturday! [last Saturday: 6 May 2023]"
    assert message_document(alone).text == "Mel: Yes, last Saturday! [last Saturday: 6 May 2023]"


def test_preceding_turns_are_the_context_nearest_first_apart_from_the_text() -> None:
    turns = [
        message("Did you go hiking?", name="Caroline", seq=1),
        message("When was it?", name="Caroline", seq=2),
    ]
    reply = message("Yes, last Saturday!", name="Mel", seq=3)
    document = message_document(reply, turns)
    assert document.text == "Mel: Yes, last Saturday! [last Saturday: 6 May 2023]"
    assert document.context == "Caroline: When was it?\nCaroline: Did you go hiking?"
    assert indexed_text(reply, turns) == f"{document.text}\n{document.context}"
    assert document.id == "message-3"


def test_the_context_names_the_legs_that_read_it() -> None:
    reply, turns = message("Yes!", seq=2), [message("Hiking?", seq=1)]
    legs = {
        name: message_document(reply, turns, context_legs=name).context_legs for name in ("text", "vector")
    }
    assert legs == {"text": rpb.CONTEXT_LEGS_TEXT, "vector": rpb.CONTEXT_LEGS_VECTOR}
    assert message_document(reply, turns).context_legs == rpb.CONTEXT_LEGS_BOTH
    assert message_document(reply).context == ""


def test_each_preceding_turn_is_bounded_and_empty_ones_are_skipped() -> None:
    long_turn = message("x" * (MAX_CONTEXT_CHARS * 3), seq=1)
    empty = message("", seq=2)
    text = indexed_text(message("short", seq=3), [long_turn, empty])
    assert text == "short\n" + "x" * MAX_CONTEXT_CHARS


@pytest.mark.parametrize(
    "said_at",
    [datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)],
    ids=["year 1", "end of 9999"],
)
def test_a_message_said_at_the_edge_of_time_is_indexed_with_its_text(said_at: datetime) -> None:
    text = "Yesterday I said we meet next year, and last week too."
    at_edge = replace(message(text), created_us=int((said_at - EPOCH) / timedelta(microseconds=1)))
    assert indexed_text(at_edge).startswith(text)
