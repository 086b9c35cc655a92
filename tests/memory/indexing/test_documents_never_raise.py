"""Building a document never raises on a stored value (issue 14.1): each becomes indexable text."""

from __future__ import annotations

import json

import pytest

from strata_memory.indexing.documents import (
    MAX_INDEXED_METADATA_CHARS,
    bounded_metadata,
    message_document,
    passage_document,
)
from strata_memory.store.records import MessageRecord, PassageRecord, ToolCallRecord


def call(arguments: str) -> MessageRecord:
    return MessageRecord(
        id="message-1",
        tenant_id="t",
        agent_id="agent-1",
        conversation_id="default",
        role="assistant",
        content="",
        tool_calls=(ToolCallRecord("call-1", "send_message", arguments),),
    )


def test_json_nested_deeper_than_the_decoder_allows_is_indexed_as_its_text() -> None:
    document = message_document(call("[" * 3000))
    assert document.text == "[" * 3000


def test_json_nested_deep_but_decodable_is_walked_without_recursion() -> None:
    deep = json.dumps({"m": "otters"})
    for _ in range(
        900
    ):  # decodable by json.loads, deeper than a recursive walk would manage in a generator chain
        deep = "[" + deep + "]"
    assert message_document(call(deep)).text == "otters"


def test_strings_keep_their_order_inside_nested_arguments() -> None:
    arguments = json.dumps({"a": ["one", {"b": "two"}], "c": "three"})
    assert message_document(call(arguments)).text == "one\ntwo\nthree"


@pytest.mark.parametrize(
    "arguments", ['{"m": "otters \\ud800 hold"}', '{"m": "\\udfff"}', '"\\ud83d"', '["\\ud800\\udc00"]']
)
def test_lone_surrogates_become_replacement_characters(arguments: str) -> None:
    document = message_document(call(arguments))
    document.SerializeToString()  # encodes as UTF-8 without raising
    assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in document.text)


def test_a_passage_with_surrogates_in_text_tags_and_metadata_is_encodable() -> None:
    passage = PassageRecord(
        "passage-1",
        "t",
        "archive-1",
        "fact \ud800",
        tags=("a\udc00", "a\ud800"),
        metadata={"k\ud800": "v\udfff"},
    )
    document = passage_document(passage)
    document.SerializeToString()
    assert document.text == "fact \ufffd"
    assert list(document.tags) == ["a\ufffd"]  # both became the same tag: kept once
    assert dict(document.metadata) == {"k\ufffd": "v\ufffd"}


def test_huge_metadata_is_bounded_in_key_order() -> None:
    metadata = {"a": "x" * 10, "b": "y" * 7_000_000, "c": "z"}
    assert bounded_metadata(metadata) == {"a": "x" * 10}
    small = {f"k{i}": "v" for i in range(10)}
    assert bounded_metadata(small) == small
    document = passage_document(PassageRecord("passage-1", "t", "archive-1", "fact", metadata=metadata))
    assert sum(len(k) + len(v) for k, v in document.metadata.items()) <= MAX_INDEXED_METADATA_CHARS
