"""Compare a render with its golden file; also runnable to print the diffs of chosen cases.

.venv/bin/python -m tests.memory.domain.golden_diff [NAME ...]   # no NAME: every case
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


def expected(name: str) -> str:
    """The golden text of ``name`` without the one newline every golden file ends with."""
    text = (GOLDEN_DIR / f"{name}.txt").read_bytes().decode("utf-8")
    assert text.endswith("\n"), f"{name}.txt must end with the extra newline (see golden/README.md)"
    return text[:-1]


def _visible(line: str) -> str:
    """Show what a plain diff hides: line ends, trailing spaces and tabs."""
    return line.replace("\t", "→TAB").rstrip("\n").replace(" ", "·") + "¶\n"


def diff(name: str, actual: str) -> str:
    """A unified diff (golden vs actual) with whitespace made visible; empty when they agree."""
    want = [_visible(line) for line in expected(name).splitlines(keepends=True)]
    got = [_visible(line) for line in actual.splitlines(keepends=True)]
    return "".join(difflib.unified_diff(want, got, f"golden/{name}.txt", "actual"))


def main(names: list[str]) -> int:
    from tests.memory.domain.golden_cases import CASES

    failed = 0
    for name in names or sorted(CASES):
        text = diff(name, CASES[name]())
        status = "ok" if expected(name) == CASES[name]() else "DIFFERS"
        failed += status != "ok"
        print(f"{name}: {status}\n{text}", end="" if not text else "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
