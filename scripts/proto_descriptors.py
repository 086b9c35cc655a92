"""The contract as descriptors with their comments: what docs/api.md and docs/errors.md are made from.

``load()`` compiles proto/ with grpcio-tools' protoc (``--include_source_info``) into a
``FileDescriptorSet`` and pairs every element with the comment written above it. The error catalogue
(``ErrorReason`` in each API's errors.proto) documents each value with a line
``Status: <CODE>. Metadata: <keys or "none">...``; ``catalogue()`` parses those lines.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
APIS = ("memory", "retrieval", "admin")
"""The APIs, each a package strata.<api>.v1 with its own ErrorReason catalogue."""

# SourceCodeInfo paths: the field numbers of FileDescriptorProto / DescriptorProto / ... children.
MESSAGE, ENUM, SERVICE = 4, 5, 6
FIELD, NESTED_MESSAGE, NESTED_ENUM = 2, 3, 4
ENUM_VALUE, METHOD = 2, 2

_STATUS_LINE = re.compile(r"Status: (?P<status>[A-Z_]+)\. Metadata: (?P<metadata>.*)$", re.DOTALL)


def proto_files() -> list[str]:
    """Every .proto of the module, relative to proto/, sorted."""
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def load() -> list[descriptor_pb2.FileDescriptorProto]:
    """Strata's own files (imports such as google/protobuf/*.proto left out), with source info."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "contract.binpb"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                "-I",
                str(PROTO_ROOT),
                "--include_source_info",
                f"--descriptor_set_out={out}",
                *proto_files(),
            ],
            check=True,
        )
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    return [f for f in files if f.name.startswith("strata/")]


def comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    """Each element's leading comment (or trailing one when it has none), by source path."""
    found: dict[tuple[int, ...], str] = {}
    for location in file.source_code_info.location:
        text = location.leading_comments or location.trailing_comments
        if text.strip():
            found[tuple(location.path)] = _tidy(text)
    return found


def _tidy(comment: str) -> str:
    return "\n".join(
        line[1:] if line.startswith(" ") else line for line in comment.strip("\n").split("\n")
    ).strip()


def file_comment(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The comment above ``syntax = ...`` (protoc keeps it as the syntax statement's detached comment)."""
    for location in file.source_code_info.location:
        if tuple(location.path) == (12,) and location.leading_detached_comments:
            return "\n\n".join(_tidy(c) for c in location.leading_detached_comments)
    return ""


@dataclass(frozen=True)
class Reason:
    """One ErrorReason value: its name (the ErrorInfo.reason string), status code and metadata keys."""

    name: str
    number: int
    status: str
    metadata: str
    meaning: str


def catalogue(files: list[descriptor_pb2.FileDescriptorProto], api: str) -> list[Reason]:
    """The ErrorReason values of ``strata.<api>.v1`` in declaration order (UNSPECIFIED left out).

    Raises ``ValueError`` for a value whose comment lacks the ``Status: ... Metadata: ...`` line.
    """
    (file,) = [f for f in files if f.name == f"strata/{api}/v1/errors.proto"]
    (index, enum) = next((i, e) for i, e in enumerate(file.enum_type) if e.name == "ErrorReason")
    notes = comments(file)
    reasons: list[Reason] = []
    for position, value in enumerate(enum.value):
        if value.number == 0:
            continue
        text = notes.get((ENUM, index, ENUM_VALUE, position), "")
        meaning, _, rest = text.partition("Status: ")
        match = _STATUS_LINE.match("Status: " + rest.replace("\n", " "))
        if match is None:
            raise ValueError(f"{file.name}: {value.name} needs a 'Status: CODE. Metadata: ...' line")
        metadata = " ".join(match["metadata"].split())
        reasons.append(Reason(value.name, value.number, match["status"], metadata, " ".join(meaning.split())))
    return reasons
