"""Strata's state (+ what an import kept verbatim) → a Letta Agent File document.

Ids are renamed consistently: agents ``agent-0…`` in order, blocks ``block-0…`` in order of first
attachment (a shared block once), then the blocks no agent lists, messages ``message-0…`` across the
agents in order. References kept verbatim (``in_context_message_ids``, a group's ``agent_ids``,
``shared_block_ids`` and ``manager_agent_id``) follow the renaming; one naming what no longer exists
is left out. Empty strings are written as ``null`` (Letta's "absent"); times as ISO 8601 in UTC.
The top-level ``created_at`` is the time of the export.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import Block
from . import fields as f
from .messages import ExportedMessage, write_message

SKELETON_KEYS = ("agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers", "metadata")


@dataclass(frozen=True, slots=True)
class ExportedBlock:
    block: Block
    residue: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ExportedAgent:
    """One agent's state: its settings, attached blocks and messages, in order."""

    strata_id: str
    name: str
    system: str
    timezone: str
    blocks: tuple[ExportedBlock, ...]
    messages: tuple[ExportedMessage, ...]
    residue: dict[str, Any] | None = None
    file_ids: Mapping[str, str] = field(default_factory=dict)
    """The import's file ids → Strata ids (empty for an agent made in Strata)."""


def write_document(
    agents: Sequence[ExportedAgent], document: Mapping[str, Any] | None, *, created_us: int
) -> dict[str, Any]:
    """The whole file: the kept top level (or a new one) with the agents and blocks written in."""
    names = _Names(agents)
    top: dict[str, Any] = copy.deepcopy(dict(document)) if document is not None else {}
    for key in SKELETON_KEYS:
        top.setdefault(key, {} if key == "metadata" else [])
    loose = [dict(raw, id=names.loose(i)) for i, raw in enumerate(top.get("blocks") or [])]
    top["agents"] = [_agent(a, i, names) for i, a in enumerate(agents)]
    top["blocks"] = [_block(b, names.blocks[b.block.id]) for b in names.unique_blocks] + loose
    top["groups"] = [_group(g, names) for g in top.get("groups") or [] if isinstance(g, dict)]
    top["created_at"] = f.iso_time(created_us)
    return {key: top[key] for key in (*_order(document), *top) if key in top}


def _order(document: Mapping[str, Any] | None) -> tuple[str, ...]:
    return tuple(document) if document is not None else ("agents", "groups", "blocks")


class _Names:
    """The export's file ids, and where each Strata id (or old file id) now points."""

    def __init__(self, agents: Sequence[ExportedAgent]) -> None:
        self.agents = {a.strata_id: f"agent-{i}" for i, a in enumerate(agents)}
        self.blocks: dict[str, str] = {}
        self.unique_blocks: list[ExportedBlock] = []
        for agent in agents:
            for exported in agent.blocks:
                if exported.block.id not in self.blocks:
                    self.blocks[exported.block.id] = f"block-{len(self.blocks)}"
                    self.unique_blocks.append(exported)
        ordered = [m.strata_id for a in agents for m in a.messages]
        self.messages = {strata_id: f"message-{i}" for i, strata_id in enumerate(ordered)}
        self.old = {old: new for a in agents for old, new in a.file_ids.items()}
        """Old file id → Strata id, over every agent of the export."""

    def loose(self, i: int) -> str:
        return f"block-{len(self.blocks) + i}"

    def renamed(self, old: Any) -> str | None:
        """The new file id of what ``old`` (an id in the import's file) named, or None if gone."""
        strata_id = self.old.get(old) if isinstance(old, str) else None
        if strata_id is None:
            return None
        return self.agents.get(strata_id) or self.blocks.get(strata_id) or self.messages.get(strata_id)

    def renamed_all(self, old: Any) -> list[str]:
        return [new for item in old or [] if (new := self.renamed(item)) is not None]


def _agent(agent: ExportedAgent, index: int, names: _Names) -> dict[str, Any]:
    own = f"agent-{index}"
    out = copy.deepcopy(agent.residue) if agent.residue is not None else _new_agent()
    if agent.residue is not None and "in_context_message_ids" in out:
        out["in_context_message_ids"] = names.renamed_all(out["in_context_message_ids"])
    elif agent.residue is None:
        out["in_context_message_ids"] = [names.messages[m.strata_id] for m in agent.messages]
    for link in out.get("files_agents") or []:
        if isinstance(link, dict) and "agent_id" in link:
            link["agent_id"] = own
    filled = {
        "id": own,
        "name": agent.name,
        "system": agent.system,
        "timezone": agent.timezone,
        "block_ids": [names.blocks[b.block.id] for b in agent.blocks],
        "messages": [write_message(m, names.messages[m.strata_id], own) for m in agent.messages],
    }
    out.update(filled)
    return out


def _new_agent() -> dict[str, Any]:
    """The unmapped fields of an agent made in Strata (no LLM settings: the target chooses)."""
    return {"agent_type": "memgpt_agent", "description": None, "tags": [], "metadata": None, "tool_ids": []}


def _block(exported: ExportedBlock, file_id: str) -> dict[str, Any]:
    block = exported.block
    out = copy.deepcopy(exported.residue) if exported.residue is not None else {}
    filled: dict[str, Any] = {
        "value": block.value,
        "limit": block.limit,
        "label": block.label,
        "read_only": block.read_only,
        "description": block.description or None,
        "metadata": dict(block.metadata),
        "id": file_id,
    }
    if out.get("metadata") is not None:
        filled.pop("metadata")  # not all strings: kept verbatim at import
    out.update(filled)
    return out


def _group(group: dict[str, Any], names: _Names) -> dict[str, Any]:
    out = copy.deepcopy(group)
    if "agent_ids" in out:
        out["agent_ids"] = names.renamed_all(out["agent_ids"])
    if "shared_block_ids" in out:
        out["shared_block_ids"] = names.renamed_all(out["shared_block_ids"])
    manager = out.get("manager_config")
    if isinstance(manager, dict) and "manager_agent_id" in manager:
        manager["manager_agent_id"] = names.renamed(manager["manager_agent_id"])
    return out
