"""MemoryService's error vocabulary: each error's category (its gRPC status), reason, message and metadata.

DESIGN.md: a budget overrun is FAILED_PRECONDITION / CHAR_LIMIT_EXCEEDED naming the block, limit,
current and requested length; a stale etag is ABORTED / ETAG_MISMATCH; a read-only block is refused
with "This block is read-only and cannot be edited."; a failing tool returns a clear message and a
structured reason. The message is what a client or an LLM reads, so it is pinned here.
"""

from __future__ import annotations

import pytest

from strata_memory.domain import errors
from strata_serving.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    StrataError,
    Unavailable,
)


def test_agent_not_found() -> None:
    error = errors.AgentNotFound("agent-7")
    assert isinstance(error, NotFound)
    assert error.reason == "AGENT_NOT_FOUND"
    assert error.message == "Agent 'agent-7' not found."
    assert error.metadata == {"agent_id": "agent-7"}


def test_block_not_found_names_where_and_what_exists() -> None:
    error = errors.BlockNotFound("hobbies", available=("human", "persona"), scope="agent 'a-1'")
    assert isinstance(error, NotFound)
    assert error.reason == "BLOCK_NOT_FOUND"
    assert error.message == (
        "Memory block 'hobbies' does not exist in agent 'a-1'. Available blocks: human, persona."
    )
    assert error.metadata == {"label": "hobbies"}


def test_block_not_found_alone() -> None:
    assert errors.BlockNotFound("x").message == "Memory block 'x' does not exist."


def test_block_exists() -> None:
    error = errors.BlockExists("human")
    assert isinstance(error, AlreadyExists)
    assert (error.reason, error.message, error.metadata) == (
        "BLOCK_EXISTS",
        "Memory block 'human' already exists.",
        {"label": "human"},
    )


def test_char_limit_exceeded_names_block_limit_current_and_requested() -> None:
    error = errors.CharLimitExceeded("human", limit=5000, current=4990, requested=5012)
    assert isinstance(error, FailedPrecondition)
    assert error.reason == "CHAR_LIMIT_EXCEEDED"
    assert error.message == (
        "Edit failed: memory block 'human' would hold 5012 characters, over its limit of 5000 "
        "(it holds 4990 now). Shorten the new text or remove something first."
    )
    assert error.metadata == {"label": "human", "limit": "5000", "current": "4990", "requested": "5012"}


def test_read_only_block_text_is_designs() -> None:
    error = errors.ReadOnlyBlock("persona")
    assert isinstance(error, FailedPrecondition)
    assert error.reason == "READ_ONLY_BLOCK"
    assert error.message == "This block is read-only and cannot be edited."
    assert error.metadata == {"label": "persona"}


def test_etag_mismatch() -> None:
    error = errors.EtagMismatch("Block 'b-1'", expected="3", actual="4")
    assert isinstance(error, Aborted)
    assert error.reason == "ETAG_MISMATCH"
    assert error.message == "Block 'b-1' changed since it was read (etag '3', now '4'); re-read it and retry."
    assert error.metadata == {"resource": "Block 'b-1'", "expected_etag": "3", "actual_etag": "4"}


def test_unknown_tool_lists_the_known_ones() -> None:
    error = errors.UnknownTool("memory_delete", known=("memory_insert", "memory_replace"))
    assert isinstance(error, NotFound)
    assert error.reason == "UNKNOWN_TOOL"
    assert error.message == "Unknown tool 'memory_delete'. Available tools: memory_insert, memory_replace."
    assert error.metadata == {"tool": "memory_delete"}


def test_conversation_not_found() -> None:
    error = errors.ConversationNotFound("a-1", "c-9")
    assert isinstance(error, NotFound)
    assert error.reason == "CONVERSATION_NOT_FOUND"
    assert error.message == "Conversation 'c-9' of agent 'a-1' not found."
    assert error.metadata == {"agent_id": "a-1", "conversation_id": "c-9"}


def test_file_not_found() -> None:
    error = errors.FileNotFound("f-3")
    assert isinstance(error, NotFound)
    assert (error.reason, error.message, error.metadata) == (
        "FILE_NOT_FOUND",
        "File 'f-3' not found.",
        {"file_id": "f-3"},
    )


@pytest.mark.parametrize(
    ("kind", "category", "reason"),
    [
        (errors.ToolArgumentError, InvalidArgument, "INVALID_TOOL_ARGUMENTS"),
        (errors.ToolEditRefused, FailedPrecondition, "EDIT_REFUSED"),
        (errors.RetrievalUnavailable, Unavailable, "RETRIEVAL_UNAVAILABLE"),
        (errors.LineNumberPrefix, FailedPrecondition, "LINE_NUMBER_PREFIX"),
        (errors.TextNotFound, FailedPrecondition, "TEXT_NOT_FOUND"),
        (errors.TextNotUnique, FailedPrecondition, "TEXT_NOT_UNIQUE"),
        (errors.InsertLineOutOfRange, InvalidArgument, "INSERT_LINE_OUT_OF_RANGE"),
    ],
)
def test_message_only_errors(kind: type[StrataError], category: type[StrataError], reason: str) -> None:
    error = kind("what went wrong")
    assert isinstance(error, category)
    assert (error.reason, error.message, str(error)) == (reason, "what went wrong", "what went wrong")


def test_refusals_of_an_edit_are_edit_refused() -> None:
    # a client may catch every refused edit by one category and reason family
    for kind in (errors.LineNumberPrefix, errors.TextNotFound, errors.TextNotUnique):
        assert issubclass(kind, errors.ToolEditRefused)
    assert issubclass(errors.InsertLineOutOfRange, errors.ToolArgumentError)
