"""One record is one line: a message carrying caller text with CR, LF, ESC, NUL, DEL or C1 controls is
written escaped by both formatters, so it cannot forge a log line or drive a terminal (issue 25)."""

from __future__ import annotations

import json
import logging

import pytest

from strata_serving.logs import ConsoleFormatter, JsonFormatter

FORGED = "agent x\r\n12:00:00.000 ERROR strata.auth  FAKEINJECTED admin key accepted\x1b[2J\x00\x7f\x9b"


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("strata.rpc", logging.WARNING, __file__, 1, "got %s", (message,), None)


@pytest.mark.parametrize("formatter", [ConsoleFormatter(), JsonFormatter()], ids=["console", "json"])
def test_control_characters_in_a_message_are_escaped(formatter: logging.Formatter) -> None:
    line = formatter.format(record(FORGED))
    assert "\n" not in line
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in line)
    assert "FAKEINJECTED" in line  # the text is kept, readable, on the one line


def test_json_lines_stay_json_and_give_the_message_back_exactly() -> None:
    assert json.loads(JsonFormatter().format(record(FORGED)))["msg"] == f"got {FORGED}"


def test_the_console_form_writes_readable_escapes() -> None:
    line = ConsoleFormatter().format(record("a\nb\x1bc"))
    assert line.endswith("got a\\nb\\x1bc")
