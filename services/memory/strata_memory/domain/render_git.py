"""Git mode: core memory rendered as a projection of a folder of Markdown files (Letta's MemFS view).

Only ``system/*`` blocks render their content: ``system/persona`` as ``<self>``, the others as a tree of
tags under ``<memory>``. Blocks outside ``system/`` and ``skills/`` are listed, without content, as a
``tree``-style file listing in ``<external_projection>``. ``skills/*`` blocks are not rendered here
(Letta lists them in a per-request ``<available_skills>`` section, which is outside core memory).
No size or read-only metadata is shown in this mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .model import Block

SYSTEM_PREFIX = "system/"
SKILLS_PREFIX = "skills/"
PERSONA_LABEL = "system/persona"
REMINDER = "Reminder: <projection> contains the local path of the memory file projection."


@dataclass
class _Node:
    """A tag in the ``<memory>`` tree: maybe a block itself (``leaf``), maybe a parent of others."""

    leaf: Block | None = None
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass
class _Folder:
    """A directory of the external listing: sub-folders and ``.md`` file names kept apart."""

    folders: dict[str, _Folder] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)


def render_git(blocks: Sequence[Block]) -> str:
    """The git-mode text, starting with two newlines; ``""`` when there is no ``system/*`` block."""
    system = [b for b in blocks if b.label.startswith(SYSTEM_PREFIX)]
    if not system:
        return ""
    out = ["\n\n" + REMINDER]
    persona = next((b for b in system if b.label == PERSONA_LABEL), None)
    if persona is not None:
        out.append(
            "\n\n<self>\n<projection>$MEMORY_DIR/system/persona.md</projection>\n"
            + persona.value.rstrip("\n")
            + "\n</self>"
        )
    others = [b for b in system if b.label != PERSONA_LABEL]
    external = [b for b in blocks if not b.label.startswith((SYSTEM_PREFIX, SKILLS_PREFIX))]
    if others or external:
        out.append("\n\n<memory>\n")
        out.extend(_render_tree(_system_tree(others), indent=0, path=()))
        if external:
            out.append(_render_external(external))
        out.append("</memory>")
    return "".join(out)


def _system_tree(blocks: Sequence[Block]) -> _Node:
    root = _Node()
    for block in blocks:
        parts = _segments(block.label.removeprefix(SYSTEM_PREFIX))
        if not parts:
            continue
        node = root
        for part in parts:
            node = node.children.setdefault(part, _Node())
        node.leaf = block
    return root


def _segments(label: str) -> list[str]:
    """Path segments of a label; empty ones are skipped so a malformed stored label still renders."""
    return [part for part in label.split("/") if part]


def _render_tree(node: _Node, *, indent: int, path: tuple[str, ...]) -> list[str]:
    """Lines of ``node``'s children, keys sorted, two spaces per level; each line ends with a newline."""
    pad = "  " * indent
    lines: list[str] = []
    for key in sorted(node.children):
        child = node.children[key]
        child_path = (*path, key)
        lines.append(f"{pad}<{key}>\n")
        if child.leaf is not None:
            lines.append(f"{pad}  <projection>$MEMORY_DIR/system/{'/'.join(child_path)}.md</projection>\n")
            description = child.leaf.description.strip()
            if description:
                lines.append(f"{pad}  <description>{description}</description>\n")
            value = child.leaf.value.rstrip("\n")
            if value:
                # Only the first line is indented: the value is written as one piece, as Letta does.
                lines.append(f"{pad}  {value}\n")
        lines.extend(_render_tree(child, indent=indent + 1, path=child_path))
        lines.append(f"{pad}</{key}>\n")
    return lines


def _render_external(blocks: Sequence[Block]) -> str:
    root = _Folder()
    for block in blocks:
        parts = _segments(block.label)
        if not parts:
            continue
        *dirs, name = parts
        folder = root
        for part in dirs:
            folder = folder.folders.setdefault(part, _Folder())
        folder.files.add(f"{name}.md")
    return (
        "<external_projection>\n${MEMORY_DIR}/\n"
        + "".join(_tree_lines(root, ""))
        + "</external_projection>\n"
    )


def _tree_lines(folder: _Folder, prefix: str) -> list[str]:
    """``tree``-style lines: folders first, then files, each group sorted."""
    entries = [(name, True) for name in sorted(folder.folders)] + [(n, False) for n in sorted(folder.files)]
    lines: list[str] = []
    for i, (name, is_folder) in enumerate(entries):
        last = i == len(entries) - 1
        connector = "└── " if last else "├── "
        if is_folder:
            lines.append(f"{prefix}{connector}{name}/\n")
            lines.extend(_tree_lines(folder.folders[name], prefix + ("    " if last else "│   ")))
        else:
            lines.append(f"{prefix}{connector}{name}\n")
    return lines
