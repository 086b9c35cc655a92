"""The folder layout: which files are blocks, and how a block file is read and written.

A block is one Markdown file; its label is the path below the folder without ``.md``
(``system/human.md`` holds ``system/human``). A file is::

    ---\\n
    <YAML front matter: description, limit, read_only>
    ---\\n
    <the value, byte for byte>

The body starts right after the first ``---`` line that follows the opening one and runs to the
end of the file: nothing is stripped or added, so an empty value is a file ending in ``---\\n``
and a value's leading and trailing newlines are the body's. Files are read and written as UTF-8
bytes, without newline translation, but a file's ``\\r\\n`` and lone ``\\r`` are read as ``\\n`` in the
value and description: the server stores every block text with LF line endings, so a file saved with
Windows line endings holds the same block as the server (no endless "local change"). Paths with
a segment starting with ``.`` (``.git``, ``.strata``, dotfiles) are never blocks; other files that
are not ``*.md`` block files are ignored and reported.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from strata.memfs.paths import write_inside

SUFFIX = ".md"
FENCE = "---"
KEYS = ("description", "limit", "read_only")
MAX_LABEL_LENGTH = 200
"""The server's longest label; longer paths could never become blocks."""


class LayoutError(ValueError):
    """A block file that cannot be read: no or unclosed front matter, bad YAML, wrong keys or types."""


@dataclass(frozen=True, slots=True)
class BlockFile:
    """What a block file says. ``limit`` and ``read_only`` are ``None`` when the front matter omits them."""

    description: str
    value: str
    limit: int | None = None
    read_only: bool | None = None


@dataclass(frozen=True, slots=True)
class Ignored:
    """A path in the folder that is not a block file, and why."""

    path: str
    reason: str


def parse_block_file(text: str) -> BlockFile:
    """Read a block file's text (see the module docstring); raises ``LayoutError``."""
    if not text.startswith(FENCE + "\n"):
        raise LayoutError("must start with a '---' line opening the YAML front matter")
    start = len(FENCE) + 1
    pos = start
    while True:
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line == FENCE:
            header, body = text[start:pos], ("" if end < 0 else text[end + 1 :])
            return _block_file(_front_matter(header), body)
        if end < 0:
            raise LayoutError("the front matter is not closed by a '---' line")
        pos = end + 1


def render_block_file(description: str, limit: int, read_only: bool, value: str) -> str:
    """The canonical text of a block file; ``parse_block_file`` gives every field back exactly."""
    fields = {"description": description, "limit": limit, "read_only": read_only}
    header = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=2**31)
    if yaml.safe_load(header) != fields:
        # Characters YAML reads as line breaks (NEL, U+2028, ...) are written raw by PyYAML and then
        # folded on reading; escaped double quotes keep every character.
        header = yaml.safe_dump(fields, sort_keys=False, default_style='"', width=2**31)
    return f"{FENCE}\n{header}{FENCE}\n{value}"


def _front_matter(header: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(header)
    except yaml.YAMLError as error:
        raise LayoutError(f"the front matter is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise LayoutError("the front matter must be a YAML mapping with a description")
    unknown = sorted(str(key) for key in loaded if key not in KEYS)
    if unknown:
        raise LayoutError(f"unknown front matter keys {unknown}; allowed: {', '.join(KEYS)}")
    return loaded


def _block_file(fields: dict[str, Any], value: str) -> BlockFile:
    description = fields.get("description")
    if not isinstance(description, str):
        raise LayoutError("the front matter needs 'description' (a string)")
    limit = fields.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise LayoutError(f"'limit' must be a positive integer, got {limit!r}")
    read_only = fields.get("read_only")
    if read_only is not None and not isinstance(read_only, bool):
        raise LayoutError(f"'read_only' must be true or false, got {read_only!r}")
    return BlockFile(description=_lf(description), value=_lf(value), limit=limit, read_only=read_only)


def _lf(text: str) -> str:
    """The server's line-ending rule: ``\\r\\n`` and lone ``\\r`` are ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def path_for_label(label: str) -> str | None:
    """The file (relative, ``/``-separated) holding ``label``, or ``None`` if it cannot be one.

    A label holding ``\\`` has none on any platform: it is a folder separator on Windows, and the
    folder must hold the same files on Linux, macOS and Windows.
    """
    segments = label.split("/")
    if any(not s or s.startswith(".") for s in segments) or "\\" in label or label_problem(label):
        return None
    return label + SUFFIX


def case_collisions(labels: Collection[str]) -> dict[str, str]:
    """Labels whose file or any of its folders differs from another label's only by case.

    On macOS and Windows such paths are one file (or folder), so none of them is synced, on every
    platform alike; the value names what it collides with.
    """
    seen: dict[str, set[str]] = {}
    for label in labels:
        segments = label.split("/")
        for depth in range(1, len(segments) + 1):
            prefix = "/".join(segments[:depth])
            seen.setdefault(prefix.casefold(), set()).add(prefix)
    found: dict[str, str] = {}
    for label in labels:
        segments = label.split("/")
        for depth in range(1, len(segments) + 1):
            spellings = seen["/".join(segments[:depth]).casefold()]
            if len(spellings) > 1:
                found[label] = " and ".join(repr(s) for s in sorted(spellings))
                break
    return found


def label_for_path(path: str) -> str | None:
    """The label a relative ``/``-separated path holds, or ``None`` if it is not a block file."""
    if not path.endswith(SUFFIX):
        return None
    label = path.removesuffix(SUFFIX)
    return label if path_for_label(label) == path else None


def label_problem(label: str) -> str | None:
    """Why the server would refuse ``label`` (its rules, checked before any call), or ``None``."""
    if len(label) > MAX_LABEL_LENGTH:
        return f"labels are at most {MAX_LABEL_LENGTH} characters"
    problem = next(filter(None, map(_character_problem, label)), None)
    if problem is not None:
        return problem
    if unicodedata.normalize("NFKC", label) != label:
        return "labels must be in Unicode NFKC form (no fullwidth or decomposed look-alikes)"
    for segment in label.split("/"):
        if len({_script(ch) for ch in segment} & _CONFUSABLE_SCRIPTS) > 1:
            return "labels may not mix Latin, Greek, Cyrillic, Armenian or Cherokee letters in one segment"
    return None


_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800") | frozenset(
    chr(c) for c in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0x180B, 0x1810))
)
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE"})
"""The server's label rules (strata_memory.domain.budgets), mirrored: this package does not import
the server's."""


def _character_problem(ch: str) -> str | None:
    if ch.isspace() or unicodedata.category(ch) in {"Cc", "Cs"}:
        return "labels may not contain whitespace or control characters"
    if ch in "<>":
        return "labels may not contain '<' or '>'"
    if unicodedata.category(ch) in {"Cf", "Co", "Cn"} or ch in _INVISIBLE_LETTERS:
        return f"labels may not contain invisible or bidi-control characters (U+{ord(ch):04X})"
    return None


def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0] if ch.isalpha() else ""


def scan(root: Path) -> tuple[dict[str, Path], list[Ignored]]:
    """Block files under ``root`` by label, and the other (non-hidden) files, each with a reason."""
    found: dict[str, Path] = {}
    ignored: list[Ignored] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in dirs:
            if (Path(folder) / name).is_symlink():
                relative = (Path(folder) / name).relative_to(root).as_posix()
                ignored.append(Ignored(relative + "/", "symbolic links are not followed"))
        for name in sorted(files):
            if name.startswith("."):
                continue
            full = Path(folder) / name
            relative = full.relative_to(root).as_posix()
            label = label_for_path(relative)
            if full.is_symlink():
                ignored.append(Ignored(relative, "symbolic links are not followed"))
            elif label is None:
                ignored.append(Ignored(relative, _why_not_a_block(relative)))
            else:
                found[label] = full
    return found, ignored


def _why_not_a_block(path: str) -> str:
    if not path.endswith(SUFFIX):
        return "not a .md file"
    if "\\" in path:
        return "its name holds '\\', a folder separator on Windows"
    problem = label_problem(path.removesuffix(SUFFIX))
    return f"its name cannot be a block label: {problem}" if problem else "not a block file"


def read_text(path: Path) -> str:
    """A file's text, decoded as UTF-8 with no newline translation; raises ``LayoutError``."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise LayoutError(f"not UTF-8 text ({error.reason} at byte {error.start})") from None


def write_text(root: Path, relative: str, text: str) -> None:
    """Write ``text`` as UTF-8 bytes exactly to ``root/relative``, creating real parent folders and
    never following a symbolic link (``strata.memfs.paths``)."""
    write_inside(root, relative, text.encode("utf-8"))
