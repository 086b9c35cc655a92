"""The sync state: which server and agent the folder mirrors, and each block as of the last sync.

Kept in ``.strata/memfs.json`` and **committed** with every sync, so each sync commit pairs the
files with the server versions they were synced against: a copy of the folder (``git clone``)
keeps syncing, ``git log -p .strata/memfs.json`` shows what each sync saw, and checking out an old
commit restores a consistent pair, which can only lead to a pull or a conflict, never to a push
over a server edit. Values are not stored, only their SHA-256; the small fields are kept so a
front matter that omits ``limit`` or ``read_only`` can be read against the last synced block.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strata.memfs.paths import write_inside

STATE_PATH = ".strata/memfs.json"
FORMAT = 1


class StateError(Exception):
    """No readable sync state: not a MemFS folder, or the state file is damaged."""


@dataclass(frozen=True, slots=True)
class Content:
    """The block fields MemFS syncs, with the value as its SHA-256; equal content means no change."""

    description: str
    limit: int
    read_only: bool
    value_sha256: str

    @classmethod
    def of(cls, description: str, limit: int, read_only: bool, value: str) -> Content:
        return cls(description, limit, read_only, value_digest(value))


@dataclass(frozen=True, slots=True)
class Base:
    """A block as it was on both sides at the last sync, with the server's id, version and etag."""

    block_id: str
    version: int
    etag: str
    content: Content


@dataclass(slots=True)
class SyncState:
    agent_id: str
    target: str
    tenant: str | None
    blocks: dict[str, Base] = field(default_factory=dict)


def value_digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def load_state(root: Path) -> SyncState:
    path = root / STATE_PATH
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StateError(
            f"{root} is not a MemFS folder (no {STATE_PATH}); run `strata memfs clone`"
        ) from None
    except (OSError, ValueError) as error:
        raise StateError(f"cannot read {path}: {error}") from None
    try:
        return _decode(raw)
    except (KeyError, TypeError, ValueError) as error:
        raise StateError(f"{path} is damaged ({error!r}); restore it with `git checkout`") from None


def save_state(root: Path, state: SyncState) -> None:
    """Write the state with sorted keys and one field per line, so its diffs stay readable."""
    blocks = {label: asdict(base) for label, base in sorted(state.blocks.items())}
    raw = {
        "format": FORMAT,
        "agent_id": state.agent_id,
        "target": state.target,
        "tenant": state.tenant,
        "blocks": blocks,
    }
    text = json.dumps(raw, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_inside(root, STATE_PATH, text.encode("utf-8"))  # never through a committed link


def _decode(raw: dict[str, Any]) -> SyncState:
    if raw["format"] != FORMAT:
        raise ValueError(f"unknown format {raw['format']}")
    blocks = {
        str(label): Base(
            block_id=str(entry["block_id"]),
            version=int(entry["version"]),
            etag=str(entry["etag"]),
            content=Content(**entry["content"]),
        )
        for label, entry in raw["blocks"].items()
    }
    tenant = raw["tenant"]
    return SyncState(
        agent_id=str(raw["agent_id"]),
        target=str(raw["target"]),
        tenant=None if tenant is None else str(tenant),
        blocks=blocks,
    )
