"""How the CLI shows results: protobuf JSON with ``--json``, readable text and tables otherwise."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any, TextIO

from google.protobuf import json_format, timestamp_pb2
from google.protobuf.message import Message

from strata.memory.v1 import resources_pb2 as pb

CELL_WIDTH = 60
"""Longest cell a table shows; longer text is cut with an ellipsis."""

RENDER_MODES = {
    "standard": pb.RENDER_MODE_STANDARD,
    "line-numbered": pb.RENDER_MODE_LINE_NUMBERED,
    "git": pb.RENDER_MODE_GIT,
}
RECOMPILE_POLICIES = {"on-edit": pb.RECOMPILE_POLICY_ON_EDIT, "explicit": pb.RECOMPILE_POLICY_EXPLICIT}
TOOL_RESULT_STYLES = {"full-value": pb.TOOL_RESULT_STYLE_FULL_VALUE, "snippet": pb.TOOL_RESULT_STYLE_SNIPPET}
MESSAGE_ROLES = {
    "system": pb.MESSAGE_ROLE_SYSTEM,
    "user": pb.MESSAGE_ROLE_USER,
    "assistant": pb.MESSAGE_ROLE_ASSISTANT,
    "tool": pb.MESSAGE_ROLE_TOOL,
}


def choice_name(choices: Mapping[str, int], value: int) -> str:
    """The CLI spelling of an enum value (``-`` when unspecified or unknown)."""
    return next((name for name, number in choices.items() if number == value), "-")


class Printer:
    """Writes one command's result to stdout, as protobuf JSON or as text for people."""

    def __init__(self, *, as_json: bool, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout

    def show(self, message: Message, human: Callable[[], None]) -> None:
        """Print ``message`` as JSON, or call ``human`` to print it as text."""
        if self.as_json:
            self.line(to_json(message))
        else:
            human()

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def text(self, text: str) -> None:
        """Print text as is, ending it with a newline if it lacks one."""
        self.stream.write(text if text.endswith("\n") or not text else text + "\n")

    def fields(self, pairs: Iterable[tuple[str, object]]) -> None:
        """``key: value`` lines with the keys aligned."""
        rows = list(pairs)
        width = max((len(key) for key, _ in rows), default=0)
        for key, value in rows:
            self.line(f"{key + ':':<{width + 1}} {value}")

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        """A left-aligned table with a header row; prints ``(none)`` when there are no rows."""
        cells = [[_cell(value) for value in row] for row in rows]
        if not cells:
            self.line("(none)")
            return
        widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
        for row in [list(headers), *cells]:
            self.line(
                "  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()
            )


def to_json(message: Message) -> str:
    """Protobuf JSON (proto3 mapping) with the proto's own field names (``tenant_id``), as grpcurl
    prints them, every field shown, indented."""
    return json_format.MessageToJson(
        message, always_print_fields_with_no_presence=True, preserving_proto_field_name=True, indent=2
    )


def to_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def timestamp(value: timestamp_pb2.Timestamp) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM:SS UTC`` (``-`` when unset)."""
    if not value.seconds and not value.nanos:
        return "-"
    return value.ToDatetime(tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def compact(value: object) -> str:
    """One-line JSON for small values such as block metadata."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _cell(value: object) -> str:
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"
