"""Settling a conflict by hand: keep the folder's version (the default) or take the server's.

Keeping the folder's version records the server's current block as the base, so the file becomes
an ordinary local edit of what the server holds now: the next push sends it, still conditional
on that version (a server edit made after ``resolve`` is a new conflict). Taking the server's
writes its block into the file (or deletes the file if the server removed the block). Only
labels in conflict are touched; each resolve is one commit naming what was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from strata.client import MemoryClient
from strata.memfs.engine import record, remove_file, sync_plan, write_remote
from strata.memfs.git import Repository
from strata.memfs.layout import SUFFIX
from strata.memfs.plan import Change, Kind
from strata.memfs.report import Outcome, Report
from strata.memfs.state import STATE_PATH, load_state, save_state


def resolve(client: MemoryClient, root: Path, paths: Sequence[str], *, theirs: bool) -> Report:
    """Resolve the conflicts of ``paths`` (block files or labels, relative to ``root``)."""
    state = load_state(root)
    changes, _ = sync_plan(client, root, state, prune=False)
    by_path = {change.path: change for change in changes}
    report = Report("resolved", state.agent_id)
    written: list[str] = []
    for wanted in paths:
        path = wanted if wanted.endswith(SUFFIX) else wanted + SUFFIX
        change = by_path.get(path)
        if change is None or change.kind is not Kind.CONFLICT:
            missing = Change(path.removesuffix(SUFFIX), Kind.INVALID)
            report.problems.append(Outcome(missing, f"{path} is not in conflict"))
            continue
        if theirs:
            _take_server(root, change)
            written.append(change.path)
        record(state, change.label, change.remote)
        detail = "took the server's version" if theirs else "kept the folder's version; push sends it"
        report.applied.append(Outcome(change, detail))
    if report.applied:
        choice = "take the server's version of" if theirs else "keep the folder's version of"
        title = f"memfs resolve: {choice} " + ", ".join(o.change.label for o in report.applied)
        body = [f"- {o.change.label}: {o.change.reason}; {o.detail}" for o in report.applied]
        save_state(root, state)
        if Repository(root).commit([*written, STATE_PATH], "\n".join([title, "", *body])):
            report.commit = title
    return report


def _take_server(root: Path, change: Change) -> None:
    if change.remote is None:
        remove_file(root, change.path)
    else:
        write_remote(root, change.path, change.remote)
