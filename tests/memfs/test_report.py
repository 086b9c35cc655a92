"""What MemFS tells people and writes into commits (``strata/memfs/report.py``): commit titles name the
labels by what was done to them, reports list each change under its heading with its mark, a
conflict shows both versions as a diff and how to settle it, and ``--json`` carries the same."""

from __future__ import annotations

from strata.memfs.layout import Ignored
from strata.memfs.plan import Change, Kind
from strata.memfs.report import Outcome, Report, commit_message, unified


def outcome(label: str, kind: Kind, reason: str = "why", detail: str = "") -> Outcome:
    return Outcome(Change(label, kind, reason), detail)


def test_a_commit_title_names_labels_by_verb_in_a_fixed_order() -> None:
    done = [
        outcome("c", Kind.PUSH_UPDATE, "edited here", "version 4"),
        outcome("gone", Kind.DETACH, "deleted here"),
        outcome("a", Kind.PUSH_CREATE, "new file"),
        outcome("x", Kind.RECORD, "same on both sides"),
        outcome("b", Kind.PULL_REMOVE, "removed there"),
        outcome("d", Kind.PULL_CREATE, "added there"),
    ]
    message = commit_message("sync", "Because.", done)
    assert message.splitlines() == [
        "memfs sync: add d; create a; update c; remove b; detach gone",
        "",
        "Because.",
        "",
        "- c: edited here (version 4)",
        "- gone: deleted here",
        "- a: new file",
        "- x: same on both sides",
        "- b: removed there",
        "- d: added there",
    ]


def test_a_long_title_names_four_labels_and_counts_the_rest() -> None:
    five = [outcome(f"l{i}", Kind.PULL_UPDATE) for i in range(5)]
    assert commit_message("pull", "w", five).splitlines()[0] == "memfs pull: update l0, l1, l2, l3 and 1 more"
    four = five[:4]
    assert commit_message("pull", "w", four).splitlines()[0] == "memfs pull: update l0, l1, l2, l3"


def test_a_commit_that_only_records_versions_says_so() -> None:
    title = commit_message("pull", "w", [outcome("x", Kind.RECORD)]).splitlines()[0]
    assert title == "memfs pull: record server versions"


def test_report_lines_put_each_change_under_its_heading() -> None:
    report = Report(
        "pushed",
        "agent-1",
        applied=[outcome("notes", Kind.PUSH_UPDATE, "edited here", "version 3")],
        problems=[outcome("small", Kind.REFUSED, "edited here", "refused by the server: too long")],
        pending=[
            Change("fresh", Kind.PULL_CREATE, "added on the server"),
            Change("old", Kind.KEPT, "deleted here; kept"),
            Change("new", Kind.PUSH_CREATE, "new file"),
        ],
        ignored=[Ignored("README.txt", "not a .md file")],
        commit="memfs push: update notes",
    )
    assert report.lines() == [
        "pushed:",
        "  M notes.md  (version 3)",
        "local edits (push sends them):",
        "  D old.md  (deleted here; kept)",
        "  A new.md  (new file)",
        "server edits (pull writes them):",
        "  A fresh.md  (added on the server)",
        "refused:",
        "  ! small.md  (refused by the server: too long)",
        "ignored:",
        "  ? README.txt  (not a .md file)",
        "committed: memfs push: update notes",
    ]
    assert not report.ok


def test_an_empty_report_is_up_to_date() -> None:
    report = Report("status", "agent-1", ignored=[Ignored("a.txt", "not a .md file")])
    assert report.ok
    assert report.lines() == ["ignored:", "  ? a.txt  (not a .md file)", "up to date"]


def test_a_conflict_shows_both_versions_and_how_to_settle_it() -> None:
    conflict = Outcome(
        Change("notes", Kind.CONFLICT, "changed here and on the server"),
        "changed here and on the server",
        local_text="a\nhere\n",
        remote_text="a\nthere\n",
    )
    lines = Report("pulled", "agent-1", problems=[conflict]).lines()
    assert lines == [
        "conflict:",
        "  C notes.md  (changed here and on the server)",
        "    --- notes.md (here)",
        "    +++ notes.md (server)",
        "    @@ -1,2 +1,2 @@",
        "     a",
        "    -here",
        "    +there",
        "    settle it: `strata memfs resolve notes.md` keeps this file, `--theirs` takes the server's",
    ]


def test_a_missing_side_is_named_in_the_diff() -> None:
    assert unified(None, "x\n", "n.md")[:2] == ["--- (no file here)", "+++ n.md (server)"]
    assert unified("x\n", None, "n.md")[:2] == ["--- n.md (here)", "+++ (no block on the server)"]


def test_the_json_report_carries_the_same() -> None:
    conflict = Outcome(Change("notes", Kind.CONFLICT, "both changed"), "", local_text="l", remote_text=None)
    report = Report(
        "pulled",
        "agent-1",
        applied=[outcome("a", Kind.PULL_CREATE, "added there", "version 1")],
        problems=[conflict],
        pending=[Change("b", Kind.PUSH_UPDATE, "edited here")],
        ignored=[Ignored("x.txt", "not a .md file")],
        commit="memfs pull: add a",
    )
    assert report.as_dict() == {
        "action": "pulled",
        "agent_id": "agent-1",
        "ok": False,
        "applied": [{"label": "a", "path": "a.md", "kind": "pull-create", "detail": "version 1"}],
        "pending": [{"label": "b", "path": "b.md", "kind": "push-update", "detail": "edited here"}],
        "problems": [
            {
                "label": "notes",
                "path": "notes.md",
                "kind": "conflict",
                "detail": "both changed",
                "local": "l",
                "server": None,
            }
        ],
        "ignored": [{"path": "x.txt", "reason": "not a .md file"}],
        "commit": "memfs pull: add a",
    }
