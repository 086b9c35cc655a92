"""What a MemFS command did or would do: per-label outcomes, their text, and commit messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from strata.memfs.layout import Ignored
from strata.memfs.plan import PROBLEMS, PULLS, PUSHES, Change, Kind

_VERBS = {
    Kind.PULL_CREATE: "add",
    Kind.PULL_UPDATE: "update",
    Kind.PULL_REMOVE: "remove",
    Kind.PUSH_CREATE: "create",
    Kind.PUSH_UPDATE: "update",
    Kind.MERGE: "merge",
    Kind.DETACH: "detach",
}
_MARKS = {
    Kind.PULL_CREATE: "A",
    Kind.PULL_UPDATE: "M",
    Kind.PULL_REMOVE: "D",
    Kind.PUSH_CREATE: "A",
    Kind.PUSH_UPDATE: "M",
    Kind.MERGE: "M",
    Kind.DETACH: "D",
    Kind.KEPT: "D",
    Kind.CONFLICT: "C",
    Kind.REFUSED: "!",
    Kind.INVALID: "!",
}
TITLE_LABELS = 4
"""Labels named in a commit title before it says "and N more"."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A change and what came of it: applied (``detail`` says how) or a problem (``detail`` says why)."""

    change: Change
    detail: str = ""
    local_text: str | None = None
    remote_text: str | None = None
    """For conflicts: both versions as file text (``None`` where a side has no block)."""


@dataclass(slots=True)
class Report:
    action: str
    agent_id: str
    applied: list[Outcome] = field(default_factory=list)
    problems: list[Outcome] = field(default_factory=list)
    pending: list[Change] = field(default_factory=list)
    """Changes for the other direction (pulls during a push and vice versa) and kept deletions."""
    ignored: list[Ignored] = field(default_factory=list)
    commit: str = ""
    """The commit's first line, empty if nothing was committed."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """The report as text for people."""
        out: list[str] = []
        out += _section(f"{self.action}:", (_entry(o.change, o.detail) for o in self.applied))
        local = [c for c in self.pending if c.kind in PUSHES or c.kind is Kind.KEPT]
        server = [c for c in self.pending if c.kind in PULLS]
        out += _section("local edits (push sends them):", (_entry(c, c.reason) for c in local))
        out += _section("server edits (pull writes them):", (_entry(c, c.reason) for c in server))
        for outcome in self.problems:
            out += _section(f"{outcome.change.kind.value}:", [_entry(outcome.change, outcome.detail)])
            out += _both_versions(outcome)
        out += _section("ignored:", (f"  ? {i.path}  ({i.reason})" for i in self.ignored))
        if self.commit:
            out.append(f"committed: {self.commit}")
        if not (self.applied or self.pending or self.problems):
            out.append("up to date")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``--json``)."""
        return {
            "action": self.action,
            "agent_id": self.agent_id,
            "ok": self.ok,
            "applied": [_outcome_dict(o) for o in self.applied],
            "pending": [_change_dict(c, c.reason) for c in self.pending],
            "problems": [_outcome_dict(o) for o in self.problems],
            "ignored": [{"path": i.path, "reason": i.reason} for i in self.ignored],
            "commit": self.commit,
        }


def commit_message(action: str, why: str, outcomes: Iterable[Outcome]) -> str:
    """``memfs ACTION: update a, create b`` and a body naming each change and why it was made."""
    done = list(outcomes)
    named = [o for o in done if o.change.kind in PULLS | PUSHES]
    verbs: dict[str, list[str]] = {}
    for outcome in named:
        verbs.setdefault(_VERBS[outcome.change.kind], []).append(outcome.change.label)
    order = ["add", "create", "update", "merge", "remove", "detach"]
    parts = [f"{verb} {_names(verbs[verb])}" for verb in sorted(verbs, key=order.index)]
    title = f"memfs {action}: " + ("; ".join(parts) if parts else "record server versions")
    body = [f"- {o.change.label}: {o.change.reason}" + (f" ({o.detail})" if o.detail else "") for o in done]
    return "\n".join([title, "", why, "", *body])


def unified(local_text: str | None, remote_text: str | None, path: str) -> list[str]:
    """Both versions of a conflicting block as a unified diff, local first."""
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(
            (local_text or "").splitlines(keepends=True),
            (remote_text or "").splitlines(keepends=True),
            fromfile=f"{path} (here)" if local_text is not None else "(no file here)",
            tofile=f"{path} (server)" if remote_text is not None else "(no block on the server)",
        )
    ]


def _names(labels: list[str]) -> str:
    shown = ", ".join(labels[:TITLE_LABELS])
    more = len(labels) - TITLE_LABELS
    return f"{shown} and {more} more" if more > 0 else shown


def _section(title: str, entries: Iterable[str]) -> list[str]:
    rows = list(entries)
    return [title, *rows] if rows else []


def _entry(change: Change, detail: str) -> str:
    mark = _MARKS.get(change.kind, " ")
    return f"  {mark} {change.path}  ({detail or change.reason})"


def _both_versions(outcome: Outcome) -> list[str]:
    if outcome.change.kind is not Kind.CONFLICT:
        return []
    path = outcome.change.path
    diff = ["    " + line for line in unified(outcome.local_text, outcome.remote_text, path)]
    hint = f"    settle it: `strata memfs resolve {path}` keeps this file, `--theirs` takes the server's"
    return [*diff, hint]


def _change_dict(change: Change, detail: str) -> dict[str, Any]:
    return {"label": change.label, "path": change.path, "kind": change.kind.value, "detail": detail}


def _outcome_dict(outcome: Outcome) -> dict[str, Any]:
    found = _change_dict(outcome.change, outcome.detail or outcome.change.reason)
    if outcome.change.kind in PROBLEMS:
        found["local"] = outcome.local_text
        found["server"] = outcome.remote_text
    return found
