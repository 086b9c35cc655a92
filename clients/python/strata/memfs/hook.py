"""The pre-commit hook ``strata memfs clone`` installs: the push refusals, enforced on every commit.

For each staged block file (added or modified; deletions detach nothing): it must be a readable
block file with a non-empty description; a file whose committed version is read-only may not be
changed; ``read_only`` may not be added, changed or removed; a new file may not be read-only.
MemFS's own sync commits skip the hook (a pull writes what the server holds). Run by git as
``python -m strata.memfs.hook`` from the top of the working tree; exit 1 refuses the commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

from strata.memfs.git import Repository
from strata.memfs.layout import BlockFile, LayoutError, label_for_path, parse_block_file

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree, to diff against before the first commit."""


def main() -> int:
    problems = staged_problems(Repository(Path.cwd(), inside_hook=True))
    for problem in problems:
        sys.stderr.write(f"memfs pre-commit: {problem}\n")
    if problems:
        sys.stderr.write("memfs pre-commit: commit refused (restore with `git checkout -- FILE`)\n")
        return 1
    return 0


def staged_problems(repo: Repository) -> list[str]:
    """Why the staged block files may not be committed (empty when they may)."""
    against = "HEAD" if repo.head_exists() else EMPTY_TREE
    listing = repo.run("diff", "--cached", "--name-status", "-z", "--no-renames", against).stdout
    fields = listing.decode("utf-8").split("\0")
    problems: list[str] = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if status == "D" or label_for_path(path) is None:
            continue
        staged = repo.show(f":{path}") or b""
        before = repo.show(f"HEAD:{path}") if status != "A" else None
        problem = file_problem(staged, before)
        if problem:
            problems.append(f"{path}: {problem}")
    return problems


def file_problem(staged: bytes, before: bytes | None) -> str | None:
    """Why a block file's new text ``staged`` may not replace ``before`` (``None``: a new file)."""
    try:
        new = parse_block_file(staged.decode("utf-8"))
    except (LayoutError, UnicodeDecodeError) as error:
        return str(error)
    if not new.description.strip():
        return "the front matter's description must not be empty"
    old = _readable(before)
    was_read_only = bool(old and old.read_only)
    if was_read_only:
        return "the block is read-only; edits to it are refused"
    if before is None and new.read_only:
        return "a new block cannot be created read-only from a file"
    if new.read_only is not None and new.read_only != was_read_only:
        return "front matter may not change read_only"
    return None


def _readable(text: bytes | None) -> BlockFile | None:
    if text is None:
        return None
    try:
        return parse_block_file(text.decode("utf-8"))
    except (LayoutError, UnicodeDecodeError):
        return None


if __name__ == "__main__":
    sys.exit(main())
