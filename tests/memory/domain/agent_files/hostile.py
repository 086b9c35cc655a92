"""Broken and hostile variants of a real Agent File, each with the path its refusal must name.

Shared by the pure tests (``test_refusals``) and the server tests (nothing created on refusal).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.memory.domain.agent_files.shared_files import SHARED, encoded, raw_document

BASE = next(p for p in SHARED if p.name == "evie.af")


@dataclass(frozen=True)
class Variant:
    name: str
    build: Callable[[], bytes]
    names: str
    """Text the refusal's message must contain (the path inside the file, and what is wrong)."""


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[], bytes]:
    def build() -> bytes:
        document = copy.deepcopy(raw_document(BASE))
        edit(document)
        return encoded(document)

    return build


def _over_limit(document: dict[str, Any]) -> None:
    block = document["blocks"][2]
    block["value"] = "x" * (block["limit"] + 1)


def _dangling(document: dict[str, Any]) -> None:
    document["agents"][0]["block_ids"].append("block-99")


def _nested(document: dict[str, Any]) -> None:
    value: Any = "deep"
    for _ in range(100):
        value = {"a": value}
    document["agents"][0]["metadata"] = value


def _duplicate_label(document: dict[str, Any]) -> None:
    twin = dict(document["blocks"][1], id="block-twin")
    document["blocks"].append(twin)
    document["agents"][0]["block_ids"].append("block-twin")


def _duplicate_id(document: dict[str, Any]) -> None:
    document["blocks"].append(dict(document["blocks"][0]))


def _unknown_role(document: dict[str, Any]) -> None:
    document["agents"][1]["messages"][1]["role"] = "approval"


def _group_stranger(document: dict[str, Any]) -> None:
    document["groups"][0]["agent_ids"].append("agent-7")


def _context_stranger(document: dict[str, Any]) -> None:
    document["agents"][1]["in_context_message_ids"].append("message-0")


def _nul(document: dict[str, Any]) -> None:
    document["blocks"][0]["value"] += "\x00"


def _surrogate() -> bytes:
    return BASE.read_bytes().replace(b'"label": "about_me"', b'"label": "about_me\\ud800"', 1)


def _truncated() -> bytes:
    data = BASE.read_bytes()
    return data[: len(data) // 2]


def _deep_json() -> bytes:
    return b"[" * 100_000 + b"]" * 100_000


VARIANTS = [
    Variant("truncated", _truncated, "agent_file: is not valid JSON"),
    Variant("dangling block reference", _edited(_dangling), "agents[0].block_ids[12]: no block 'block-99'"),
    Variant("value over its limit", _edited(_over_limit), "blocks[2].value: is 296 characters"),
    Variant("100-level nested value", _edited(_nested), "agents[0].metadata.a.a"),
    Variant(
        "two blocks of one label", _edited(_duplicate_label), "agents[0].block_ids[12]: block 'block-twin'"
    ),
    Variant("duplicate block id", _edited(_duplicate_id), "blocks[13].id: duplicate id 'block-0'"),
    Variant("unknown role", _edited(_unknown_role), "agents[1].messages[1].role: 'approval'"),
    Variant("group names a stranger", _edited(_group_stranger), "groups[0].agent_ids[1]: no agent"),
    Variant("another agent's message in context", _edited(_context_stranger), "in_context_message_ids[2]"),
    Variant("100,000-level nested JSON", _deep_json, "nests arrays and objects deeper than 64"),
    Variant("NUL in a value", _edited(_nul), "blocks[0].value: holds U+0000"),
    Variant("lone surrogate in a label", _surrogate, "blocks[0].label: holds U+0000 or a lone surrogate"),
    Variant("not an object", lambda: json.dumps([1, 2]).encode(), "must hold a JSON object, not an array"),
    Variant("not UTF-8", lambda: b'{"agents": "\xff"}', "is not UTF-8"),
    Variant("no agents", lambda: b'{"agents": [], "blocks": []}', "agents: the file holds no agent"),
]
