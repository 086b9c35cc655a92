"""MemoryService's typed errors. Each names what happened; strata_serving maps its category to a status.

The memory tools raise these too: ExecuteTool turns them into an error *result* (reason + message the
LLM reads) instead of a failed RPC, so the vocabulary is the same on both paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from strata_serving.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)


class AgentNotFound(NotFound):
    default_reason = "AGENT_NOT_FOUND"

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"Agent '{agent_id}' not found.", metadata={"agent_id": agent_id})


class BlockNotFound(NotFound):
    default_reason = "BLOCK_NOT_FOUND"

    def __init__(self, label: str, *, available: tuple[str, ...] = (), scope: str = "") -> None:
        where = f" in {scope}" if scope else ""
        hint = f" Available blocks: {', '.join(available)}." if available else ""
        super().__init__(f"Memory block '{label}' does not exist{where}.{hint}", metadata={"label": label})


class BlockExists(AlreadyExists):
    default_reason = "BLOCK_EXISTS"

    def __init__(self, label: str) -> None:
        super().__init__(f"Memory block '{label}' already exists.", metadata={"label": label})


class CharLimitExceeded(FailedPrecondition):
    """A write would leave a block longer than its limit (or a limit below the current length)."""

    default_reason = "CHAR_LIMIT_EXCEEDED"

    def __init__(self, label: str, *, limit: int, current: int, requested: int) -> None:
        super().__init__(
            f"Edit failed: memory block '{label}' would hold {requested} characters, over its limit of "
            f"{limit} (it holds {current} now). Shorten the new text or remove something first.",
            metadata={"label": label, "limit": limit, "current": current, "requested": requested},
        )


class ReadOnlyBlock(FailedPrecondition):
    """The text is DESIGN.md's, byte for byte (the LLM reads it); the label goes in the metadata."""

    default_reason = "READ_ONLY_BLOCK"

    def __init__(self, label: str) -> None:
        super().__init__("This block is read-only and cannot be edited.", metadata={"label": label})


class EtagMismatch(Aborted):
    default_reason = "ETAG_MISMATCH"

    def __init__(self, resource: str, *, expected: str, actual: str) -> None:
        super().__init__(
            f"{resource} changed since it was read (etag {expected!r}, now {actual!r}); "
            "re-read it and retry.",
            metadata={"resource": resource, "expected_etag": expected, "actual_etag": actual},
        )


class MergeConflict(Aborted):
    """An edit based on an older version overlaps what changed since: nothing was written.

    Each conflicting hunk is a ``BadRequest`` field violation (``block.value`` or the whole field that
    both sides set) and, as JSON, the ErrorInfo metadata ``hunks`` (``base_start``, ``base_end``,
    ``base``, ``current``, ``proposed``), so a client can show or resolve them without re-reading.
    """

    default_reason = "MERGE_CONFLICT"

    def __init__(
        self,
        resource: str,
        *,
        base_version: int,
        current_version: int,
        hunks: Sequence[Mapping[str, object]],
        violations: Sequence[tuple[str, str]],
    ) -> None:
        super().__init__(
            f"{resource} changed since version {base_version} where this edit changes it too "
            f"({len(violations)} conflicting hunk(s), now at version {current_version}); nothing was "
            "written. Re-read the block, redo the edit on its current text and retry.",
            metadata={
                "resource": resource,
                "base_version": base_version,
                "current_version": current_version,
                "conflicts": len(violations),
                "hunks": json.dumps(list(hunks), ensure_ascii=False),
            },
            field_violations=violations,
        )


class UnknownBase(InvalidArgument):
    """A ``base_etag`` names no version in the block's history (another block's, or made up)."""

    default_reason = "UNKNOWN_BASE_ETAG"

    def __init__(self, resource: str, base_etag: str, *, field: str = "base_etag") -> None:
        problem = (
            f"{base_etag!r} is not the etag of any version of {resource} in its history; "
            "send an etag the block returned (GetBlock, ListBlocks, ListBlockVersions)"
        )
        super().__init__(f"{field}: {problem}", field_violations=[(field, problem)])


class ToolArgumentError(InvalidArgument):
    """A memory tool was called with missing, mistyped or malformed arguments."""

    default_reason = "INVALID_TOOL_ARGUMENTS"


class ToolEditRefused(FailedPrecondition):
    """A memory tool's arguments are well formed but the edit cannot apply (no match, line prefix...)."""

    default_reason = "EDIT_REFUSED"


class UnknownTool(NotFound):
    default_reason = "UNKNOWN_TOOL"

    def __init__(self, name: str, *, known: tuple[str, ...]) -> None:
        super().__init__(
            f"Unknown tool '{name}'. Available tools: {', '.join(known)}.", metadata={"tool": name}
        )


class RetrievalUnavailable(Unavailable):
    default_reason = "RETRIEVAL_UNAVAILABLE"


class ConversationNotFound(NotFound):
    default_reason = "CONVERSATION_NOT_FOUND"

    def __init__(self, agent_id: str, conversation_id: str) -> None:
        super().__init__(
            f"Conversation '{conversation_id}' of agent '{agent_id}' not found.",
            metadata={"agent_id": agent_id, "conversation_id": conversation_id},
        )


class ReceiptNotFound(NotFound):
    """No prompt receipt has this id (in this tenant, or of this agent)."""

    default_reason = "RECEIPT_NOT_FOUND"

    def __init__(self, receipt_id: str, *, agent_id: str = "") -> None:
        of = f" of agent '{agent_id}'" if agent_id else ""
        super().__init__(
            f"Prompt receipt '{receipt_id}'{of} not found: send the receipt id GetSystemPrompt or "
            "RecompileSystemPrompt returned for this agent.",
            metadata={"receipt_id": receipt_id},
        )


class FileNotFound(NotFound):
    default_reason = "FILE_NOT_FOUND"

    def __init__(self, file_id: str) -> None:
        super().__init__(f"File '{file_id}' not found.", metadata={"file_id": file_id})


class LineNumberPrefix(ToolEditRefused):
    """A tool argument carries a display-only line-number prefix (``3→ ``) or the line-number warning."""

    default_reason = "LINE_NUMBER_PREFIX"


class TextNotFound(ToolEditRefused):
    """The text a replace tool should change does not appear in the block."""

    default_reason = "TEXT_NOT_FOUND"


class TextNotUnique(ToolEditRefused):
    """The text a replace tool should change appears more than once where exactly one is required."""

    default_reason = "TEXT_NOT_UNIQUE"


class InsertLineOutOfRange(ToolArgumentError):
    """``insert_line`` is outside ``[0, number of lines]`` and is not -1."""

    default_reason = "INSERT_LINE_OUT_OF_RANGE"
