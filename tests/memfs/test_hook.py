"""The pre-commit hook's rules (``strata/memfs/hook.py``), checked in-process over a real git repository:
each staged block file must be readable with a description; read-only blocks stay unedited; read_only
is never added, changed or removed; a new file is never read-only; deletions and non-block files pass.
(test_safety.py runs the installed hook through ``git commit``; git's subprocess is not measured.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strata.memfs import hook
from strata.memfs.git import GitError, Repository


def text(description: str = "about it", value: str = "v", *, read_only: bool | None = None) -> bytes:
    lines = ["---", f"description: {description!r}"]
    if read_only is not None:
        lines.append(f"read_only: {'true' if read_only else 'false'}")
    return ("\n".join([*lines, "---", value])).encode()


@pytest.mark.parametrize(
    ("staged", "before", "problem"),
    [
        (text(), None, None),
        (text(value="new"), text(), None),
        (text(read_only=False), None, None),
        (text(read_only=False), text(), None),
        (text(read_only=True), text(read_only=True), "the block is read-only; edits to it are refused"),
        (text(value="new"), text(read_only=True), "the block is read-only; edits to it are refused"),
        (text(read_only=True), None, "a new block cannot be created read-only from a file"),
        (text(read_only=True), text(), "front matter may not change read_only"),
        (text(read_only=True), text(read_only=False), "front matter may not change read_only"),
        (text(description=" "), None, "the front matter's description must not be empty"),
        (text(value="new"), b"not a block file", None),  # an unreadable committed version is not read-only
        (text(value="new"), b"\xff\xfe", None),
        (b"no front matter", None, "must start with a '---' line opening the YAML front matter"),
    ],
)
def test_file_problem(staged: bytes, before: bytes | None, problem: str | None) -> None:
    assert hook.file_problem(staged, before) == problem


def test_undecodable_bytes_are_a_problem() -> None:
    assert hook.file_problem(b"---\ndescription: x\n---\n\xff", None) is not None


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repository:
    for key, value in {
        "GIT_AUTHOR_NAME": "Hook Test",
        "GIT_AUTHOR_EMAIL": "hook@example.invalid",
        "GIT_COMMITTER_NAME": "Hook Test",
        "GIT_COMMITTER_EMAIL": "hook@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)
    repository = Repository(tmp_path)
    repository.init()
    return repository


def stage(repo: Repository, files: dict[str, bytes | None]) -> None:
    for path, content in files.items():
        if content is None:
            (repo.root / path).unlink()
        else:
            (repo.root / path).parent.mkdir(parents=True, exist_ok=True)
            (repo.root / path).write_bytes(content)
    repo.run("add", "--all")


def test_before_the_first_commit_every_staged_block_file_is_new(repo: Repository) -> None:
    stage(repo, {"fine.md": text(), "locked.md": text(read_only=True), "README.txt": b"anything"})
    assert hook.staged_problems(repo) == ["locked.md: a new block cannot be created read-only from a file"]


def test_staged_changes_are_checked_against_the_last_commit(repo: Repository) -> None:
    stage(repo, {"policy.md": text(read_only=True), "notes.md": text(), "gone.md": text(read_only=True)})
    repo.run("commit", "--quiet", "--no-verify", "-m", "first")
    stage(
        repo,
        {
            "policy.md": text(value="edited", read_only=True),
            "notes.md": text(read_only=True),
            "gone.md": None,  # a deletion detaches nothing: allowed
            "sub/new.md": text(description=""),
            "sub/.hidden.md": text(read_only=True),  # not a block file
        },
    )
    assert sorted(hook.staged_problems(repo)) == [
        "notes.md: front matter may not change read_only",
        "policy.md: the block is read-only; edits to it are refused",
        "sub/new.md: the front matter's description must not be empty",
    ]


def test_main_refuses_the_commit_and_says_why(
    repo: Repository, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo.root)
    stage(repo, {"fine.md": text()})
    assert hook.main() == 0
    assert capsys.readouterr().err == ""
    stage(repo, {"locked.md": text(read_only=True)})
    assert hook.main() == 1
    assert capsys.readouterr().err == (
        "memfs pre-commit: locked.md: a new block cannot be created read-only from a file\n"
        "memfs pre-commit: commit refused (restore with `git checkout -- FILE`)\n"
    )


def test_show_is_none_for_what_git_does_not_hold(repo: Repository) -> None:
    assert repo.show("HEAD:notes.md") is None  # no commit yet
    stage(repo, {"notes.md": text()})
    assert repo.show(":notes.md") == text()
    repo.run("commit", "--quiet", "--no-verify", "-m", "first")
    assert repo.show("HEAD:notes.md") == text()
    assert repo.show("HEAD:missing.md") is None


def test_a_failing_git_command_raises_with_gits_message(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository"):
        Repository(tmp_path).run("log")
