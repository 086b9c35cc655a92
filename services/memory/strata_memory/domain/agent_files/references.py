"""Every id a file refers to must be an id the file holds (else INVALID_ARGUMENT naming the path)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from . import fields as f


class _Agent(Protocol):
    @property
    def file_id(self) -> str: ...
    @property
    def residue(self) -> dict[str, Any]: ...
    @property
    def messages(self) -> Sequence[Any]: ...


def check_references(document: Mapping[str, Any], agents: Sequence[_Agent], blocks: Collection[str]) -> None:
    """Refs of agents (tools, sources, groups, files, in-context messages), groups and files."""
    top = dict(document)
    tools, sources = _ids_of(top, "tools"), _ids_of(top, "sources")
    files, groups = _ids_of(top, "files"), _ids_of(top, "groups")
    agent_ids = {a.file_id for a in agents}
    for i, agent in enumerate(agents):
        path, residue = f"agents[{i}]", agent.residue
        _all_in(
            residue,
            "in_context_message_ids",
            path,
            {m.file_id for m in agent.messages},
            f"message in {path}.messages",
        )
        _all_in(residue, "tool_ids", path, tools, "tool in the file's tools")
        _all_in(residue, "source_ids", path, sources, "source in the file's sources")
        _all_in(residue, "folder_ids", path, sources, "source in the file's sources")
        _all_in(residue, "group_ids", path, groups, "group in the file's groups")
        for j, raw in enumerate(f.items(residue, "files_agents", path)):
            where = f"{path}.files_agents[{j}]"
            link = f.obj(raw, where)
            _one_in(link, "file_id", where, files, "file in the file's files")
            _one_in(link, "source_id", where, sources, "source in the file's sources")
    for k, raw in enumerate(f.items(top, "groups", "")):
        path = f"groups[{k}]"
        group = f.obj(raw, path)
        _all_in(group, "agent_ids", path, agent_ids, "agent in the file")
        _all_in(group, "shared_block_ids", path, blocks, "block in the file")
        manager = group.get("manager_config")
        if isinstance(manager, dict):
            _one_in(manager, "manager_agent_id", f"{path}.manager_config", agent_ids, "agent in the file")
    for k, raw in enumerate(f.items(top, "files", "")):
        _one_in(
            f.obj(raw, f"files[{k}]"), "source_id", f"files[{k}]", sources, "source in the file's sources"
        )


def _ids_of(top: dict[str, Any], key: str) -> set[str]:
    found: set[str] = set()
    for i, raw in enumerate(f.items(top, key, "")):
        item = f.obj(raw, f"{key}[{i}]")
        item_id = f.required_text(item, "id", f"{key}[{i}]")
        if item_id in found:
            raise f.refuse(f"{key}[{i}].id", f"duplicate id {item_id!r}")
        found.add(item_id)
    return found


def _all_in(parent: dict[str, Any], key: str, path: str, known: Collection[str], what: str) -> None:
    for j, ref in enumerate(f.ids(parent, key, path)):
        if ref not in known:
            raise f.refuse(f"{path}.{key}[{j}]", f"no {what} has id {ref!r}")


def _one_in(parent: dict[str, Any], key: str, path: str, known: Collection[str], what: str) -> None:
    ref = f.text(parent, key, path)
    if ref and ref not in known:
        raise f.refuse(f"{path}.{key}", f"no {what} has id {ref!r}")
