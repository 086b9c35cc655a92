"""A Letta Agent File's document → what Strata creates (:class:`ImportPlan`), checked whole first.

What maps (docs/agent-files.md has the table): each agent's ``name``, ``system`` (kept as written:
Strata, like Letta, puts compiled memory at ``{CORE_MEMORY}`` or after it), ``timezone``, its
``block_ids`` in order and its ``messages`` in order; each attached block's ``label``, ``value``,
``limit``, ``description``, ``read_only`` and ``metadata`` (when every value is a string). A block
several agents list is one Strata block attached to each (shared). Everything else is kept verbatim
(the residues), and ``Report`` says which paths; secrets are emptied and reported as dropped.

Refused, naming the path inside the file (nothing is created): a value over its block's limit
(Strata enforces limits on every write, so it does not import a block it would refuse), duplicate ids,
two blocks of one label in one agent, a reference to an id the file does not hold, a field of the
wrong type, an unknown role or timezone, a file with no agents.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..budgets import validate_label, validate_limit
from ..model import DEFAULT_BLOCK_LIMIT, Block
from ..newlines import block_with_lf, normalise_newlines
from ..prompt import zone
from . import fields as f
from .files import PlannedFile, plan_files
from .messages import PlannedMessage, PlannedToolCall, plan_message
from .references import check_references
from .secrets import scrub

AGENT_MAPPED = ("id", "name", "system", "timezone", "block_ids", "messages")
PROVIDER_SETTINGS = ("llm_config", "embedding_config", "model_settings", "compaction_settings")
"""Agent settings that could carry a provider's credentials: scrubbed all through."""
BLOCK_MAPPED = ("id", "label", "value", "limit", "description", "read_only", "metadata")

__all__ = [
    "ImportPlan",
    "PlannedAgent",
    "PlannedBlock",
    "PlannedFile",
    "PlannedMessage",
    "PlannedToolCall",
    "Report",
]


@dataclass(frozen=True, slots=True)
class PlannedBlock:
    file_id: str
    block: Block
    residue: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedAgent:
    file_id: str
    name: str
    system: str
    timezone: str
    block_file_ids: tuple[str, ...]
    messages: tuple[PlannedMessage, ...]
    residue: dict[str, Any]
    files: tuple[PlannedFile, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    kept_verbatim: tuple[str, ...] = ()
    """Paths of unmapped, non-empty values kept with the agents (written back on export)."""
    dropped: tuple[str, ...] = ()
    """Paths of secrets that were emptied (never stored, never exported)."""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportPlan:
    agents: tuple[PlannedAgent, ...]
    blocks: tuple[PlannedBlock, ...]
    """The blocks some agent lists, in the file's order (each created once)."""
    document: dict[str, Any]
    """The top level (``agents`` a ``None`` placeholder); ``blocks`` holds only those no agent lists."""
    report: Report

    @property
    def message_count(self) -> int:
        return sum(len(a.messages) for a in self.agents)


def plan_import(document: Mapping[str, Any]) -> ImportPlan:
    """Check the whole document and plan the import; raises ``InvalidArgument`` naming the path."""
    raw_agents = f.items(dict(document), "agents", "")
    if not raw_agents:
        raise f.refuse("agents", "the file holds no agent")
    blocks = [_plan_block(raw, f"blocks[{i}]") for i, raw in enumerate(f.items(dict(document), "blocks", ""))]
    by_id = _unique({b.file_id: b for b in blocks}, [b.file_id for b in blocks], "blocks")
    agents = [_plan_agent(raw, f"agents[{i}]", by_id, document) for i, raw in enumerate(raw_agents)]
    _unique({a.file_id: a for a in agents}, [a.file_id for a in agents], "agents")
    message_ids = [m.file_id for a in agents for m in a.messages]
    _unique(dict.fromkeys(message_ids), message_ids, "messages")
    check_references(document, agents, set(by_id))
    used = {block_id for a in agents for block_id in a.block_file_ids}
    top = {key: None if key == "agents" else copy.deepcopy(value) for key, value in document.items()}
    raw_blocks = f.items(dict(document), "blocks", "")
    top["blocks"] = [
        copy.deepcopy(raw) for raw, b in zip(raw_blocks, blocks, strict=True) if b.file_id not in used
    ]
    dropped = [p for i, a in enumerate(agents) for p in scrub(a.residue, f"agents[{i}]", deep=False)]
    dropped += [
        p
        for i, a in enumerate(agents)
        for key in PROVIDER_SETTINGS
        for p in scrub(a.residue.get(key), f"agents[{i}].{key}", deep=True)
    ]
    dropped += scrub(top.get("mcp_servers"), "mcp_servers", deep=True)
    report = Report(
        kept_verbatim=tuple(_kept(top, agents, blocks)),
        dropped=tuple(dropped),
        warnings=tuple(_warnings(blocks, used)),
    )
    return ImportPlan(tuple(agents), tuple(b for b in blocks if b.file_id in used), top, report)


def _plan_block(raw: Any, path: str) -> PlannedBlock:
    item = f.obj(raw, path)
    label = f.required_text(item, "label", path)
    limit = f.whole(item, "limit", path)
    metadata = item.get("metadata")
    plain = isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())
    block = block_with_lf(
        Block(
            label=label,
            value=f.text(item, "value", path),
            limit=DEFAULT_BLOCK_LIMIT if limit is None else limit,
            description=f.text(item, "description", path),
            read_only=f.flag(item, "read_only", path),
            metadata=dict(metadata) if plain and isinstance(metadata, dict) else {},
        )
    )
    f.reframed(lambda: validate_label(block.label, field="label"), f"{path}.label")
    f.reframed(lambda: validate_limit(block.limit), f"{path}.limit")
    if len(block.value) > block.limit:
        raise f.refuse(
            f"{path}.value", f"is {len(block.value)} characters, longer than its limit of {block.limit}"
        )
    residue = {k: (None if k in BLOCK_MAPPED else copy.deepcopy(v)) for k, v in item.items()}
    if not plain and metadata is not None:
        residue["metadata"] = copy.deepcopy(metadata)
    return PlannedBlock(f.required_text(item, "id", path), block, residue)


def _plan_agent(
    raw: Any, path: str, blocks: Mapping[str, PlannedBlock], document: Mapping[str, Any]
) -> PlannedAgent:
    agent = f.obj(raw, path)
    timezone = f.text(agent, "timezone", path, default="UTC")
    f.reframed(lambda: zone(timezone), f"{path}.timezone")
    block_ids = f.ids(agent, "block_ids", path)
    labels: dict[str, int] = {}
    for i, block_id in enumerate(block_ids):
        where = f"{path}.block_ids[{i}]"
        if block_id not in blocks:
            raise f.refuse(where, f"no block {block_id!r} in the file")
        label = blocks[block_id].block.label
        if label in labels:
            first = f"{path}.block_ids[{labels[label]}]"
            raise f.refuse(where, f"block {block_id!r} has label {label!r}, which {first} already uses")
        labels[label] = i
    messages = tuple(
        plan_message(m, f"{path}.messages[{i}]") for i, m in enumerate(f.items(agent, "messages", path))
    )
    return PlannedAgent(
        file_id=f.required_text(agent, "id", path),
        name=f.text(agent, "name", path),
        system=normalise_newlines(f.text(agent, "system", path)),
        timezone=timezone,
        block_file_ids=tuple(block_ids),
        messages=messages,
        residue={k: (None if k in AGENT_MAPPED else copy.deepcopy(v)) for k, v in agent.items()},
        files=plan_files(agent, path, document),
    )


def _unique(by_id: dict[str, Any], ids: list[str], path: str) -> dict[str, Any]:
    if len(by_id) != len(ids):
        seen: set[str] = set()
        for i, item_id in enumerate(ids):
            if item_id in seen:
                raise f.refuse(f"{path}[{i}].id", f"duplicate id {item_id!r}")
            seen.add(item_id)
    return by_id


def _kept(top: dict[str, Any], agents: list[PlannedAgent], blocks: list[PlannedBlock]) -> list[str]:
    kept = [key for key, value in top.items() if _present(value) and key != "created_at"]
    for i, agent in enumerate(agents):
        kept += [
            f"agents[{i}].{k}" for k, v in agent.residue.items() if _present(v) and k not in AGENT_MAPPED
        ]
        kept += sorted(
            {
                f"agents[{i}].messages[].{k}"
                for message in agent.messages
                for k, v in message.residue.items()
                if (_present(v) and k not in ("content", "tool_calls", "type"))
                or (k == "content" and _many(v))
            }
        )
    kept += [f"blocks[{i}].metadata" for i, b in enumerate(blocks) if b.residue.get("metadata") is not None]
    return kept


def _many(content: Any) -> bool:
    """Content kept verbatim (several parts, or a part that is not text)."""
    return isinstance(content, list) and not (len(content) == 1 and content[0].get("text", "") is None)


def _present(value: Any) -> bool:
    return value not in (None, "", [], {}, False)


def _warnings(blocks: list[PlannedBlock], used: set[str]) -> list[str]:
    return [
        f"blocks[{i}]: no agent lists block {b.file_id!r}; it is kept verbatim, not created"
        for i, b in enumerate(blocks)
        if b.file_id not in used
    ]
