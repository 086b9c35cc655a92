"""What a sync should do with each label: a pure three-way comparison of base, server and folder.

For each label the *base* is the block as of the last sync, the *remote* the block on the server
now, the *local* the file now. A side changed when its content differs from the base (content,
not etag: a server write that leaves the synced fields as they were is no change). One side
changed: copy it to the other. Both changed to the same content: record it. Both changed
differently: a *merge*, pushed to the server as an update based on the base's etag, which the
server three-way merges line by line (its one merge; the engine first asks it, without writing,
whether the merge is clean, and a true overlap is a conflict that touches neither side). Deleted
on one side and changed on the other, or created on both, is a conflict. Local edits to read-only blocks, a
``read_only`` that differs from the base, and empty descriptions are refused before any call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from strata.memfs.layout import BlockFile, path_for_label, render_block_file
from strata.memfs.state import Base, Content


@dataclass(frozen=True, slots=True)
class Remote:
    """A block as ``ListBlocks`` returned it."""

    block_id: str
    label: str
    version: int
    etag: str
    description: str
    limit: int
    read_only: bool
    value: str

    @property
    def content(self) -> Content:
        return Content.of(self.description, self.limit, self.read_only, self.value)

    def text(self) -> str:
        """The block as its file's text."""
        return render_block_file(self.description, self.limit, self.read_only, self.value)

    def as_base(self) -> Base:
        return Base(block_id=self.block_id, version=self.version, etag=self.etag, content=self.content)


@dataclass(frozen=True, slots=True)
class Local:
    """A block file: its parsed fields, or why it could not be read."""

    path: str
    file: BlockFile | None = None
    error: str = ""


class Kind(StrEnum):
    UNCHANGED = "unchanged"
    RECORD = "record"
    """Both sides hold the same content; only the base moves (a new etag, or edits that converged)."""
    FORGET = "forget"
    """Gone from both sides."""
    PULL_CREATE = "pull-create"
    PULL_UPDATE = "pull-update"
    PULL_REMOVE = "pull-remove"
    PUSH_CREATE = "push-create"
    PUSH_UPDATE = "push-update"
    MERGE = "merge"
    """Changed here and on the server: the push sends the file's edit based on the base version."""
    DETACH = "detach"
    KEPT = "kept"
    """Deleted here, kept on the server: a deleted file detaches nothing without ``--prune``."""
    CONFLICT = "conflict"
    REFUSED = "refused"
    INVALID = "invalid"


PULLS = frozenset({Kind.PULL_CREATE, Kind.PULL_UPDATE, Kind.PULL_REMOVE})
PUSHES = frozenset({Kind.PUSH_CREATE, Kind.PUSH_UPDATE, Kind.MERGE, Kind.DETACH})
BOOKKEEPING = frozenset({Kind.RECORD, Kind.FORGET})
PROBLEMS = frozenset({Kind.CONFLICT, Kind.REFUSED, Kind.INVALID})


@dataclass(frozen=True, slots=True)
class Change:
    label: str
    kind: Kind
    reason: str = ""
    base: Base | None = None
    remote: Remote | None = None
    local: Local | None = None
    mask: tuple[str, ...] = ()
    """For ``PUSH_UPDATE``: the fields to send (``value``, ``description``, ``limit``)."""

    @property
    def path(self) -> str:
        if self.local is not None:
            return self.local.path
        return path_for_label(self.label) or self.label


def local_content(file: BlockFile, fallback: Content | None) -> Content:
    """The file's content, taking an omitted ``limit``/``read_only`` from ``fallback`` (0/false if none)."""
    limit = file.limit if file.limit is not None else (fallback.limit if fallback else 0)
    read_only = file.read_only if file.read_only is not None else (fallback.read_only if fallback else False)
    return Content.of(file.description, limit, read_only, file.value)


def classify(
    label: str, base: Base | None, remote: Remote | None, local: Local | None, *, prune: bool
) -> Change:
    """What to do with ``label``; see the module docstring."""
    found = Change(label, Kind.UNCHANGED, base=base, remote=remote, local=local)
    if local is not None and local.file is None:
        return _with(found, Kind.INVALID, local.error)
    fallback = base.content if base else (remote.content if remote else None)
    mine = local_content(local.file, fallback) if local and local.file else None
    theirs = remote.content if remote else None
    synced = base.content if base else None
    local_changed, remote_changed = mine != synced, theirs != synced
    if local_changed and remote_changed:
        return _both_changed(found, mine, theirs, prune=prune)
    if remote_changed:
        kind = Kind.PULL_REMOVE if remote is None else (Kind.PULL_UPDATE if local else Kind.PULL_CREATE)
        return _with(found, kind, _remote_reason(kind))
    if local_changed:
        return _local_change(found, mine, prune=prune)
    if base is not None and remote is not None and remote.etag != base.etag:
        return _with(found, Kind.RECORD, "the server's version moved without changing synced fields")
    return found


def _both_changed(found: Change, mine: Content | None, theirs: Content | None, *, prune: bool) -> Change:
    if mine == theirs:
        kind = Kind.FORGET if mine is None else Kind.RECORD
        return _with(found, kind, "both sides made the same change")
    if found.base is not None and mine is not None and theirs is not None and not theirs.read_only:
        pushed = _local_change(found, mine, prune=prune)
        if pushed.kind is not Kind.PUSH_UPDATE:
            return pushed  # refused as a one-sided edit would be
        reason = "changed here and on the server: the push merges them line by line"
        return Change(found.label, Kind.MERGE, reason, found.base, found.remote, found.local, pushed.mask)
    if found.base is None:
        reason = "created here and on the server with different content"
    elif mine is None:
        reason = "deleted here, changed on the server"
    elif theirs is None:
        reason = "changed here, removed from the agent on the server"
    else:
        reason = "changed here and on the server since the last sync"
    return _with(found, Kind.CONFLICT, reason)


def _local_change(found: Change, mine: Content | None, *, prune: bool) -> Change:
    base = found.base
    if mine is None:
        return _local_deletion(found, prune=prune)
    if base is None:
        if mine.read_only:
            return _with(found, Kind.REFUSED, "a new block cannot be created read-only from a file")
        return _with(found, *_checked_description(mine, Kind.PUSH_CREATE, "new file"))
    if base.content.read_only:
        return _with(found, Kind.REFUSED, "the block is read-only; edits to it are refused")
    if mine.read_only != base.content.read_only:
        return _with(found, Kind.REFUSED, "front matter may not change read_only")
    mask = tuple(
        name
        for name, changed in (
            ("value", mine.value_sha256 != base.content.value_sha256),
            ("description", mine.description != base.content.description),
            ("limit", mine.limit != base.content.limit),
        )
        if changed
    )
    kind, reason = _checked_description(mine, Kind.PUSH_UPDATE, "edited here: " + ", ".join(mask))
    return Change(found.label, kind, reason, found.base, found.remote, found.local, mask)


def _local_deletion(found: Change, *, prune: bool) -> Change:
    if not prune:
        return _with(found, Kind.KEPT, "deleted here; kept on the server (--prune detaches it)")
    if found.base is not None and found.base.content.read_only:
        return _with(found, Kind.REFUSED, "read-only blocks are not detached")
    return _with(found, Kind.DETACH, "deleted here, --prune given")


def _checked_description(mine: Content, kind: Kind, reason: str) -> tuple[Kind, str]:
    if not mine.description.strip():
        return Kind.REFUSED, "the front matter's description must not be empty"
    return kind, reason


def _remote_reason(kind: Kind) -> str:
    return {
        Kind.PULL_CREATE: "attached on the server",
        Kind.PULL_UPDATE: "changed on the server",
        Kind.PULL_REMOVE: "removed from the agent on the server",
    }[kind]


def _with(found: Change, kind: Kind, reason: str) -> Change:
    return Change(found.label, kind, reason, found.base, found.remote, found.local)
