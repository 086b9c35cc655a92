"""Claude's ``/memories`` paths as Strata block labels, and what ``view`` shows: pure functions.

A path names a label the way the omni ``memory`` tool maps it: ``/memories/a/b`` is the label
``a/b`` (inner slashes kept). ``/memories`` itself is the directory of every block; a prefix of some
labels (``/memories/a``) is a directory of the blocks under it. A path outside ``/memories``, or one
with an empty, ``.`` or ``..`` segment, is refused: nothing outside the agent's memory can be named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ROOT = "/memories"
LINE_NUMBER_WIDTH = 6
LISTING_DEPTH = 2


class PathRefused(ValueError):
    """A path that names nothing inside ``/memories``; the message is for the model."""


@dataclass(frozen=True)
class MemoryPath:
    """A checked path: ``label`` is "" for ``/memories`` itself."""

    path: str
    label: str

    @property
    def is_root(self) -> bool:
        return not self.label

    def prefix(self) -> str:
        """Labels under this path as a directory start with this ("" for the root)."""
        return f"{self.label}/" if self.label else ""

    def under(self, label: str) -> bool:
        return label.startswith(self.prefix())


def parse(path: str) -> MemoryPath:
    """Check ``path`` and name its label; :class:`PathRefused` if it is outside ``/memories``."""
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise PathRefused(f"Path must start with {ROOT}, got: {path}")
    rest = path.removeprefix(ROOT).removeprefix("/").removesuffix("/")
    segments = rest.split("/") if rest else []
    if any(segment in ("", ".", "..") for segment in segments) or "\\" in rest:
        raise PathRefused(f"Path {path} would escape {ROOT} or has an empty segment; use {ROOT}/name")
    return MemoryPath(path.rstrip("/") or ROOT, "/".join(segments))


def path_of(label: str) -> str:
    return f"{ROOT}/{label}"


def format_size(size: int) -> str:
    """Bytes as the memory tool's listings show them: 0B, 512B, 1.5K, 2M."""
    value, unit = float(size), "B"
    for next_unit in ("K", "M", "G"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{int(value)}{unit}" if value == int(value) else f"{value:.1f}{unit}"


def listing(directory: MemoryPath, sizes: Mapping[str, int]) -> str:
    """The blocks under ``directory`` (``sizes``: label -> bytes) as files and directories, two levels
    deep; a directory's size is the sum of the blocks under it."""
    entries: dict[str, int] = {}
    prefix = directory.prefix()
    for label, size in sizes.items():
        if not label.startswith(prefix):
            continue
        parts = label[len(prefix) :].split("/")
        for depth in range(1, min(len(parts), LISTING_DEPTH) + 1):
            is_dir = depth < len(parts)
            name = "/".join(parts[:depth]) + ("/" if is_dir else "")
            entries[name] = entries.get(name, 0) + size
    total = sum(size for label, size in sizes.items() if label.startswith(prefix))
    lines = [f"{format_size(total)}\t{directory.path}"]
    lines.extend(f"{format_size(entries[name])}\t{directory.path}/{name}" for name in sorted(entries))
    header = (
        f"Here're the files and directories up to 2 levels deep in {directory.path}, excluding hidden items:"
    )
    return header + "\n" + "\n".join(lines)


def numbered(path: str, value: str, view_range: Sequence[int] | None) -> str:
    """The block's lines numbered from 1, or lines ``view_range[0]``..``view_range[1]`` (-1: to the end)."""
    lines = value.split("\n")
    first, last = 1, len(lines)
    if view_range:
        if len(view_range) != 2:
            raise PathRefused(f"view_range must be [start, end], got {list(view_range)}")
        first, last = max(1, view_range[0]), len(lines) if view_range[1] == -1 else view_range[1]
        if first > len(lines) or last < first:
            raise PathRefused(
                f"Invalid view_range {list(view_range)}: {path} has {len(lines)} lines; "
                "give [start, end] with 1 <= start <= end, or end -1 for the last line."
            )
    shown = lines[first - 1 : last]
    body = "\n".join(
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}" for number, line in enumerate(shown, first)
    )
    return f"Here's the content of {path} with line numbers:\n{body}"
