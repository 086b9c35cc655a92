"""Clone, status, pull and push: the sync plan (``plan.py``) applied to the server, folder and git.

Every command reads the agent's blocks (``ListBlocks``) and the folder, classifies each label,
and applies only its own direction: a pull writes files, a push calls the server, and each ends
with one commit of the paths it wrote plus the state file. Pushes are conditional: an update
carries the etag of the block just read, and is only sent when that block's synced fields still
equal the base, so a server edit made since the last sync is never overwritten (a write that
lands in between makes the update fail with ``ABORTED``, reported as a conflict). A label changed
on both sides is sent based on the base's etag and merged by the server; the plan asks the server
first, without writing (``validate_only``), so a true overlap is a conflict in status, pull and
push alike, and a push writes the merged block back into the file. A failure on
one block is reported and the others go on; the state and commit are written even when a
connection error ends the command early.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from strata.client import MemoryClient, StrataClientError
from strata.memfs.git import Repository
from strata.memfs.layout import (
    BlockFile,
    Ignored,
    LayoutError,
    parse_block_file,
    read_text,
    scan,
    write_text,
)
from strata.memfs.paths import remove_inside
from strata.memfs.plan import BOOKKEEPING, PROBLEMS, PULLS, PUSHES, Change, Kind, Local, Remote, classify
from strata.memfs.projection import MAX_BLOCK_BYTES, projectable, remote_blocks, remote_of
from strata.memfs.report import Outcome, Report, commit_message
from strata.memfs.state import STATE_PATH, SyncState, load_state, save_state
from strata.memory.v1 import resources_pb2 as pb

HOOK_MODULE = "strata.memfs.hook"
ATTRIBUTES_PATH = ".gitattributes"
ATTRIBUTES = "# strata memfs: values are byte for byte; git must never convert line endings\n* -text\n"
BLOCK_ERRORS = frozenset(
    {
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
    }
)
"""Failures that concern one block: reported, and the command goes on with the others."""
MERGE_CONFLICT = "MERGE_CONFLICT"
"""The server's reason for a merge whose two sides changed the same lines."""


class MemfsError(Exception):
    """A MemFS command cannot run (e.g. cloning into a folder that is not empty)."""


def clone(
    client: MemoryClient,
    agent_id: str,
    root: Path,
    *,
    target: str,
    tenant: str | None,
    max_block_bytes: int = MAX_BLOCK_BYTES,
) -> Report:
    """Create ``root`` as a git repository holding the agent's blocks, with a first commit."""
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise MemfsError(f"{root} exists and is not an empty folder")
    remotes, ignored, _ = remote_blocks(client, agent_id, max_block_bytes=max_block_bytes)
    labels, colliding = projectable(root, set(remotes))
    remotes, ignored = {label: remotes[label] for label in labels}, ignored + colliding
    root.mkdir(parents=True, exist_ok=True)
    repo = Repository(root)
    repo.init()
    hook_problem = repo.install_hook(HOOK_MODULE)
    write_text(root, ATTRIBUTES_PATH, ATTRIBUTES)
    state = SyncState(agent_id=agent_id, target=target, tenant=tenant)
    report = Report("cloned", agent_id, ignored=ignored + _hook_ignored(hook_problem))
    for label, remote in sorted(remotes.items()):
        change = Change(label, Kind.PULL_CREATE, "attached on the server", remote=remote)
        outcome = _apply_pull(client, root, state, change)
        (report.problems if outcome.change.kind in PROBLEMS else report.applied).append(outcome)
    save_state(root, state)
    why = f"Cloned agent {agent_id} from {target} (tenant {tenant or 'default'})."
    paths = [o.change.path for o in report.applied]
    message = commit_message("clone", why, report.applied)
    if not paths:
        message = f"memfs clone: agent {agent_id} has no blocks yet\n\n{why}"
    if repo.commit([*paths, STATE_PATH, ATTRIBUTES_PATH], message):
        report.commit = message.splitlines()[0]
    return report


def status(client: MemoryClient, root: Path, *, max_block_bytes: int = MAX_BLOCK_BYTES) -> Report:
    """What a pull and a push would do, and what neither can (conflicts, refusals)."""
    state = load_state(root)
    changes, ignored = sync_plan(client, root, state, prune=False, max_block_bytes=max_block_bytes)
    report = Report("status", state.agent_id, ignored=ignored)
    for change in changes:
        if change.kind in PROBLEMS:
            report.problems.append(_problem(root, change))
        elif change.kind in PULLS | PUSHES or change.kind is Kind.KEPT:
            report.pending.append(change)
    return report


def pull(client: MemoryClient, root: Path, *, max_block_bytes: int = MAX_BLOCK_BYTES) -> Report:
    """Write the server's changes since the last sync into the folder; local edits are kept."""
    why = "Server changes since the last sync, written to the folder."
    sync = Sync(direction=PULLS, apply=_apply_pull, why=why, prune=False, max_block_bytes=max_block_bytes)
    return _run(("pull", "pulled"), client, root, sync)


def push(
    client: MemoryClient, root: Path, *, prune: bool = False, max_block_bytes: int = MAX_BLOCK_BYTES
) -> Report:
    """Send local edits to the server, each conditional on the block being unchanged there."""
    why = "Local edits since the last sync, sent to the server."
    sync = Sync(direction=PUSHES, apply=_apply_push, why=why, prune=prune, max_block_bytes=max_block_bytes)
    return _run(("push", "pushed"), client, root, sync)


def sync_plan(
    client: MemoryClient, root: Path, state: SyncState, *, prune: bool, max_block_bytes: int = MAX_BLOCK_BYTES
) -> tuple[list[Change], list[Ignored]]:
    """Every label's change, and the files and server blocks that cannot take part
    (``strata.memfs.projection``: those labels are left out of the plan altogether)."""
    remotes, remote_ignored, withheld = remote_blocks(client, state.agent_id, max_block_bytes=max_block_bytes)
    locals_, local_ignored = local_files(root)
    labels, unsafe = projectable(root, (set(state.blocks) | set(remotes) | set(locals_)) - withheld)
    changes = [
        classify(label, state.blocks.get(label), remotes.get(label), locals_.get(label), prune=prune)
        for label in labels
    ]
    return [_merge_checked(client, root, c) for c in changes], local_ignored + remote_ignored + unsafe


def _merge_checked(client: MemoryClient, root: Path, change: Change) -> Change:
    """A merge as the server would do it now: still a merge, a conflict (the lines overlap) or a
    refusal (e.g. the merged value is over the budget). Nothing is written."""
    if change.kind is not Kind.MERGE:
        return change
    try:
        _update(client, change, validate_only=True)
    except StrataClientError as error:
        if error.code not in BLOCK_ERRORS:
            raise
        if error.reason == MERGE_CONFLICT:
            return _as(change, Kind.CONFLICT, "changed here and on the server since the last sync")
        return _refused_by_server(root, change, error).change
    return change


def local_files(root: Path) -> tuple[dict[str, Local], list[Ignored]]:
    """The folder's block files by label, each parsed or with the reason it cannot be."""
    paths, ignored = scan(root)
    found: dict[str, Local] = {}
    for label, path in paths.items():
        relative = path.relative_to(root).as_posix()
        try:
            found[label] = Local(relative, parse_block_file(read_text(path)))
        except LayoutError as error:
            found[label] = Local(relative, error=str(error))
    return found, ignored


Apply = Callable[[MemoryClient, Path, SyncState, Change], Outcome]


@dataclass(frozen=True, slots=True)
class Sync:
    """What one pull or push does: the changes it applies, how, and the commit's reason."""

    direction: frozenset[Kind]
    apply: Apply
    why: str
    prune: bool
    max_block_bytes: int


def _run(action: tuple[str, str], client: MemoryClient, root: Path, sync: Sync) -> Report:
    state = load_state(root)
    hook_problem = Repository(root).install_hook(HOOK_MODULE)  # a `git clone` gets it on first use
    changes, ignored = sync_plan(client, root, state, prune=sync.prune, max_block_bytes=sync.max_block_bytes)
    ignored += _hook_ignored(hook_problem)
    report = Report(action[1], state.agent_id, ignored=ignored)
    try:
        for change in changes:
            if change.kind in sync.direction | BOOKKEEPING:
                outcome = sync.apply(client, root, state, change)
                (report.problems if outcome.change.kind in PROBLEMS else report.applied).append(outcome)
            elif change.kind in PROBLEMS:
                report.problems.append(_problem(root, change))
            elif change.kind is not Kind.UNCHANGED:
                report.pending.append(change)
    finally:
        _commit(root, state, report, action[0], f"{sync.why}\nAgent {state.agent_id} at {state.target}.")
    return report


def _hook_ignored(problem: str | None) -> list[Ignored]:
    return [] if problem is None else [Ignored(".git/hooks/pre-commit", problem)]


def _commit(root: Path, state: SyncState, report: Report, action: str, why: str) -> None:
    if not report.applied:
        return
    save_state(root, state)
    paths = [o.change.path for o in report.applied if o.change.kind in PULLS | PUSHES]
    message = commit_message(action, why, report.applied)
    if Repository(root).commit([*paths, STATE_PATH], message):
        report.commit = message.splitlines()[0]


def _apply_pull(client: MemoryClient, root: Path, state: SyncState, change: Change) -> Outcome:
    remote = change.remote
    if change.kind in PULLS and not _unchanged_since_plan(root, change):
        return _problem(root, _as(change, Kind.CONFLICT, "the file changed here during this pull"))
    try:
        if change.kind is Kind.PULL_REMOVE:
            remove_file(root, change.path)
        elif remote is not None and change.kind in PULLS:
            write_remote(root, change.path, remote)
    except OSError as error:
        return Outcome(_as(change, Kind.INVALID, f"cannot write {change.path}: {error.strerror}"))
    record(state, change.label, remote)
    return Outcome(change, f"version {remote.version}" if remote else "")


def _unchanged_since_plan(root: Path, change: Change) -> bool:
    """Whether the file still says what the plan read (an editor may have saved in between)."""
    path = root / change.path
    if change.local is None:
        return not os.path.lexists(path)  # a dangling link is not "no file"
    try:
        return Local(change.local.path, parse_block_file(read_text(path))) == change.local
    except (OSError, LayoutError):
        return False


def _apply_push(client: MemoryClient, root: Path, state: SyncState, change: Change) -> Outcome:
    try:
        if change.kind is Kind.PUSH_CREATE:
            created = _create(client, state.agent_id, change)
            record(state, change.label, created)
            return Outcome(change, f"block {created.block_id}, version {created.version}")
        if change.kind is Kind.PUSH_UPDATE:
            updated = _update(client, change)
            record(state, change.label, updated)
            return Outcome(change, f"version {updated.version}")
        if change.kind is Kind.MERGE:
            return _merge(client, root, state, change)
        if change.kind is Kind.DETACH and change.base is not None:
            etag = change.remote.etag if change.remote is not None else ""  # as just read: conditional
            client.detach_block(agent_id=state.agent_id, block_id=change.base.block_id, etag=etag)
    except StrataClientError as error:
        if error.code not in BLOCK_ERRORS:
            raise
        return _refused_by_server(root, change, error)
    record(state, change.label, change.remote if change.kind is Kind.RECORD else None)
    return Outcome(change)


def _create(client: MemoryClient, agent_id: str, change: Change) -> Remote:
    file = _file(change)
    block = pb.Block(label=change.label, value=file.value, description=file.description)
    if file.limit is not None:
        block.limit = file.limit
    return remote_of(client.create_block(block=block, agent_id=agent_id))


def _merge(client: MemoryClient, root: Path, state: SyncState, change: Change) -> Outcome:
    """Send the file's edit based on the base version; the server merges it with its own edits,
    and the merged block is written back into the file (which must not have changed meanwhile)."""
    if not _unchanged_since_plan(root, change):
        return _problem(root, _as(change, Kind.CONFLICT, "the file changed here during this push"))
    merged = _update(client, change)
    try:
        write_remote(root, change.path, merged)
    except OSError as error:
        return Outcome(
            _as(
                change,
                Kind.INVALID,
                f"merged on the server as version {merged.version}, "
                f"but cannot write {change.path}: {error.strerror}",
            )
        )
    record(state, change.label, merged)
    return Outcome(change, f"merged as version {merged.version}")


def _update(client: MemoryClient, change: Change, *, validate_only: bool = False) -> Remote:
    """The file's edit as an update: conditional on the block just read, or for a merge based on
    the version of the last sync."""
    file, remote = _file(change), change.remote
    if remote is None:
        raise ValueError(f"an update of {change.label!r} needs the server's block")
    block = pb.Block(value=file.value, description=file.description)
    if file.limit is not None:
        block.limit = file.limit
    merge = change.kind is Kind.MERGE and change.base is not None
    updated = client.update_block(
        block=block,
        update_mask=change.mask,
        block_id=remote.block_id,
        etag="" if merge else remote.etag,
        base_etag=change.base.etag if merge and change.base else "",
        validate_only=validate_only,
    )
    return remote_of(updated)


def _file(change: Change) -> BlockFile:
    if change.local is None or change.local.file is None:
        raise ValueError(f"pushing {change.label!r} needs a readable file")
    return change.local.file


def _refused_by_server(root: Path, change: Change, error: StrataClientError) -> Outcome:
    """A block-level failure: a lost race is a conflict, anything else a refusal naming the reason."""
    if error.code in {grpc.StatusCode.ABORTED, grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.NOT_FOUND}:
        return _problem(root, _as(change, Kind.CONFLICT, f"changed on the server during this push ({error})"))
    details = "".join(f", {key}={value}" for key, value in sorted(error.metadata.items()))
    reason = f"refused by the server: {error.code.name} {error.reason or ''}: {error.message}{details}"
    return Outcome(_as(change, Kind.REFUSED, reason.replace(" :", ":")))


def _problem(root: Path, change: Change) -> Outcome:
    if change.kind is not Kind.CONFLICT:
        return Outcome(change, change.reason)
    local_text = None
    with contextlib.suppress(OSError, LayoutError):
        local_text = read_text(root / change.path) if change.local else None
    return Outcome(change, change.reason, local_text, change.remote.text() if change.remote else None)


def record(state: SyncState, label: str, remote: Remote | None) -> None:
    """Make ``remote`` the base of ``label``; with ``None`` the label is no longer tracked."""
    if remote is None:
        state.blocks.pop(label, None)
    else:
        state.blocks[label] = remote.as_base()


def write_remote(root: Path, path: str, remote: Remote) -> None:
    """Write the server's block into its file (never through a symbolic link)."""
    write_text(root, path, remote.text())


def remove_file(root: Path, path: str) -> None:
    """Delete a block file and the folders it leaves empty (never a link's target)."""
    remove_inside(root, path)


def _as(change: Change, kind: Kind, reason: str) -> Change:
    return Change(change.label, kind, reason, change.base, change.remote, change.local, change.mask)
