"""A Letta agent's attached files (``files_agents``, naming ``files`` and ``sources``) → Strata files.

Each link an agent holds becomes a Strata file attached to that agent (rendered under
``<directories>``): directory = the source's ``name``, name = the link's ``file_name`` (else the
file's), content = the file's ``content``, open as the link says, shown up to the agent's
``per_file_view_window_char_limit`` characters (else Strata's default). The file's ``files``,
``sources`` and ``files_agents`` stay in the residues too, so an export writes them back as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..budgets import validate_label, validate_limit
from ..model import DEFAULT_FILE_LIMIT
from ..newlines import normalise_newlines
from . import fields as f


@dataclass(frozen=True, slots=True)
class PlannedFile:
    directory: str
    name: str
    content: str
    limit: int
    is_open: bool


def plan_files(agent: Mapping[str, Any], path: str, document: Mapping[str, Any]) -> tuple[PlannedFile, ...]:
    """The Strata files of one agent (references already checked by ``references``)."""
    files, sources = _by_id(document, "files"), _by_id(document, "sources")
    limit = f.whole(dict(agent), "per_file_view_window_char_limit", path) or DEFAULT_FILE_LIMIT
    planned: dict[tuple[str, str], int] = {}
    out = []
    for j, raw in enumerate(f.items(dict(agent), "files_agents", path)):
        where = f"{path}.files_agents[{j}]"
        link = f.obj(raw, where)
        file = files.get(f.text(link, "file_id", where), {})
        source = sources.get(f.text(link, "source_id", where) or f.text(file, "source_id", "files"), {})
        directory = f.text(source, "name", "sources") or "files"
        name = f.text(link, "file_name", where) or f.text(file, "file_name", "files")
        f.reframed(partial(validate_label, directory, field="directory"), f"{where}.source_id")
        f.reframed(partial(validate_label, name, field="file_name"), f"{where}.file_name")
        f.reframed(partial(validate_limit, limit), f"{path}.per_file_view_window_char_limit")
        if (directory, name) in planned:
            first = f"{path}.files_agents[{planned[directory, name]}]"
            raise f.refuse(where, f"file {name!r} in {directory!r} is already attached by {first}")
        planned[directory, name] = j
        content = normalise_newlines(f.text(file, "content", "files"))
        out.append(PlannedFile(directory, name, content, limit, bool(link.get("is_open", True))))
    return tuple(out)


def _by_id(document: Mapping[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """The items of ``document[key]`` by id (malformed ones are refused later, by ``references``)."""
    items = document.get(key)
    if not isinstance(items, list):
        return {}
    return {i["id"]: i for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)}
