"""<memory_metadata>, timestamps, system-prompt assembly and the tool envelope."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_memory.domain.prompt import (
    MemoryStats,
    assemble_system_prompt,
    format_timestamp,
    render_memory_metadata,
)
from strata_memory.domain.tools import tool_envelope
from strata_serving.errors import InvalidArgument

MOMENT = datetime(2026, 8, 1, 18, 24, 28, tzinfo=UTC)


def _stats(**overrides: object) -> MemoryStats:
    values: dict[str, object] = {
        "agent_id": "agent-123",
        "conversation_id": "default",
        "recompiled_at": MOMENT,
        "timezone": "UTC",
        "message_count": 42,
        "archival_count": 156,
        "archival_tags": ["project_x", "ideas", "meeting_notes", "ideas"],
    }
    values.update(overrides)
    return MemoryStats(**values)  # type: ignore[arg-type]


def test_metadata_matches_design_example_exactly() -> None:
    assert render_memory_metadata(_stats()) == (
        "<memory_metadata>\n"
        "- AGENT_ID: agent-123\n"
        "- CONVERSATION_ID: default\n"
        "- System prompt last recompiled: 2026-08-01 06:24:28 PM UTC+0000\n"
        "- 42 previous messages between you and the user are stored in recall memory "
        "(use tools to access them)\n"
        "- 156 total memories you created are stored in archival memory (use tools to access them)\n"
        "- Available archival memory tags: ideas, meeting_notes, project_x\n"
        "</memory_metadata>"
    )


def test_one_archival_memory_is_shown() -> None:
    text = render_memory_metadata(_stats(archival_count=1, archival_tags=()))
    assert "- 1 total memories you created are stored in archival memory (use tools to access them)\n" in text


def test_metadata_without_archival_or_tags_omits_both_lines() -> None:
    text = render_memory_metadata(_stats(message_count=0, archival_count=0, archival_tags=()))
    assert text == (
        "<memory_metadata>\n"
        "- AGENT_ID: agent-123\n"
        "- CONVERSATION_ID: default\n"
        "- System prompt last recompiled: 2026-08-01 06:24:28 PM UTC+0000\n"
        "- 0 previous messages between you and the user are stored in recall memory "
        "(use tools to access them)\n"
        "</memory_metadata>"
    )


def test_tags_line_is_independent_of_the_archival_count() -> None:
    text = render_memory_metadata(_stats(archival_count=0, archival_tags=["b", "a"]))
    assert "archival memory (use" not in text
    assert "- Available archival memory tags: a, b\n" in text


@pytest.mark.parametrize(
    ("moment", "tz", "expected"),
    [
        (MOMENT, "UTC", "2026-08-01 06:24:28 PM UTC+0000"),
        (MOMENT, "America/New_York", "2026-08-01 02:24:28 PM EDT-0400"),
        (MOMENT, "Asia/Tokyo", "2026-08-02 03:24:28 AM JST+0900"),
        (datetime(2026, 1, 15, 0, 5, 9, tzinfo=UTC), "Europe/Paris", "2026-01-15 01:05:09 AM CET+0100"),
        (datetime(2026, 8, 1, 12, 0, 0), "UTC", "2026-08-01 12:00:00 PM UTC+0000"),  # naive = UTC
        (
            datetime(2026, 8, 1, 12, 0, tzinfo=timezone(timedelta(hours=2))),
            "UTC",
            "2026-08-01 10:00:00 AM UTC+0000",
        ),
    ],
)
def test_timestamp_format_in_the_agents_timezone(moment: datetime, tz: str, expected: str) -> None:
    assert format_timestamp(moment, tz) == expected


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "../etc/passwd", "UTC\x00"])
def test_unknown_timezone_is_an_invalid_argument(tz: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        format_timestamp(MOMENT, tz)
    assert caught.value.reason == "INVALID_TIMEZONE"


def test_assembly_replaces_every_core_memory_variable() -> None:
    raw = "You are Sam.\n{CORE_MEMORY}\nAgain: {CORE_MEMORY}"
    assert assemble_system_prompt(raw, "MEM", "META") == "You are Sam.\nMEM\n\nMETA\nAgain: MEM\n\nMETA"


def test_assembly_appends_after_two_newlines_when_the_variable_is_missing() -> None:
    assert assemble_system_prompt("You are Sam.", "MEM", "META") == "You are Sam.\n\nMEM\n\nMETA"


def test_assembly_with_empty_memory_keeps_the_separator() -> None:
    assert assemble_system_prompt("S", "", "META") == "S\n\n\n\nMETA"


def test_assembly_does_not_expand_the_variable_inside_memory() -> None:
    assert assemble_system_prompt("{CORE_MEMORY}", "{CORE_MEMORY}", "M") == "{CORE_MEMORY}\n\nM"


def test_assembly_keeps_other_braces_untouched() -> None:
    assert assemble_system_prompt("{name} {CORE_MEMORY} {}", "m", "x") == "{name} m\n\nx {}"


def test_envelope_ok_is_letta_json() -> None:
    text = tool_envelope(True, "Name: Bob\nLikes tea 🙂", MOMENT, "UTC")
    assert text == (
        "{\n"
        '  "status": "OK",\n'
        '  "message": "Name: Bob\\nLikes tea 🙂",\n'
        '  "time": "2026-08-01 06:24:28 PM UTC+0000"\n'
        "}"
    )


@settings(max_examples=300, deadline=None)
@given(
    ok=st.booleans(),
    message=st.text(st.characters(exclude_categories=[])),
    timezone=st.sampled_from(["UTC", "Asia/Tokyo", "America/New_York"]),
)
def test_envelope_is_json_dumps_with_a_two_space_indent(ok: bool, message: str, timezone: str) -> None:
    """Any message (quotes, control characters, non-BMP, lone surrogates) comes out as json.dumps
    with indent=2 and ensure_ascii=False writes it."""
    envelope = {
        "status": "OK" if ok else "Failed",
        "message": message,
        "time": format_timestamp(MOMENT, timezone),
    }
    assert tool_envelope(ok, message, MOMENT, timezone) == json.dumps(envelope, indent=2, ensure_ascii=False)


def test_envelope_failed_round_trips() -> None:
    decoded = json.loads(tool_envelope(False, 'bad "quote"', MOMENT, "Asia/Tokyo"))
    assert decoded == {
        "status": "Failed",
        "message": 'bad "quote"',
        "time": "2026-08-02 03:24:28 AM JST+0900",
    }
