"""Three-way merge of a block's text: what a writer changed since the version it read, joined with
what others changed since then, line by line.

The writer read the *base*; the block now holds *current*; the writer proposes *proposed* (made from
the base). The line merge is the ``merge3`` library's (bzr's diff3, the algorithm ``git merge-file``
also follows), not ours. Its rules, which callers rely on:

- a line region only one side changed takes that side's lines; both sides making the same change
  take it once;
- both sides changing the same base lines differently is a *conflict*, and so are changes to
  *adjacent* lines (no unchanged line between them), as in git: a merge is only trusted where an
  unchanged line anchors each change;
- lines are split after each ``\\n``; a last line without one is a different line from the same text
  with one (appending after it touches it).

Any conflict makes the whole merge fail: :func:`merge_text` returns the hunks and no text, and
nothing is written. Other fields (description, limit, ...) merge as wholes with :func:`merge_field`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from merge3 import Merge3

from .errors import MergeConflict
from .model import Block

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ConflictHunk:
    """One region both sides changed differently: its place in the base and each side's lines.

    ``base_start``/``base_end`` are 1-based and inclusive (``base_end`` is ``base_start - 1`` when
    both sides inserted at the same place, before line ``base_start``).
    """

    base_start: int
    base_end: int
    base: str
    current: str
    proposed: str

    def describe(self) -> str:
        """One line a person reads: where, and what each side holds there."""
        where = (
            f"lines {self.base_start}-{self.base_end}"
            if self.base_end > self.base_start
            else f"line {self.base_start}"
            if self.base_end == self.base_start
            else f"an insertion before line {self.base_start}"
        )
        return (
            f"{where} of the base: the block now has {self.current!r} "
            f"where this edit has {self.proposed!r} (base {self.base!r})"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "base_start": self.base_start,
            "base_end": self.base_end,
            "base": self.base,
            "current": self.current,
            "proposed": self.proposed,
        }


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged text when ``conflicts`` is empty; otherwise ``text`` is empty and nothing applies."""

    text: str
    conflicts: tuple[ConflictHunk, ...]

    @property
    def clean(self) -> bool:
        return not self.conflicts


def merge_text(base: str, current: str, proposed: str) -> MergeResult:
    """Join base → current and base → proposed line by line; see the module docstring for the rules."""
    if proposed in (base, current):
        return MergeResult(current, ())
    if current == base:
        return MergeResult(proposed, ())
    lines = [text.splitlines(keepends=True) for text in (base, current, proposed)]
    merger = Merge3(lines[0], lines[1], lines[2])
    merged: list[str] = []
    conflicts: list[ConflictHunk] = []
    for region in merger.merge_regions():
        kind = region[0]
        if kind == "unchanged":
            merged.extend(lines[0][region[1] : region[2]])
        elif kind in ("a", "same"):
            merged.extend(lines[1][region[1] : region[2]])
        elif kind == "b":
            merged.extend(lines[2][region[1] : region[2]])
        else:
            base_start, base_end, a_start, a_end, b_start, b_end = region[1:7]  # type: ignore[misc]
            conflicts.append(
                ConflictHunk(
                    base_start=base_start + 1,
                    base_end=base_end,
                    base=_joined(lines[0][base_start:base_end]),
                    current=_joined(lines[1][a_start:a_end]),
                    proposed=_joined(lines[2][b_start:b_end]),
                )
            )
    if conflicts:
        return MergeResult("", tuple(conflicts))
    return MergeResult("".join(merged), ())


@dataclass(frozen=True, slots=True)
class FieldConflict:
    """A whole-valued field both sides set differently since the base."""

    field: str
    base: object
    current: object
    proposed: object


def merge_field(name: str, base: T, current: T, proposed: T) -> T | FieldConflict:
    """The field's merged value: the side that changed it, or a conflict when both did differently."""
    if proposed in (base, current):
        return current
    if current == base:
        return proposed
    return FieldConflict(name, base, current, proposed)


def merged_changes(base: Block, current: Block, changes: Mapping[str, object]) -> dict[str, object]:
    """The changes to apply to ``current`` so that it also holds what ``changes`` made of ``base``.

    ``changes`` maps field names (Block attributes) to the values an edit of ``base`` wants.
    ``value`` merges line by line (:func:`merge_text`); every other field merges as a whole
    (:func:`merge_field`). Raises :class:`MergeConflict`, listing every conflicting hunk and field,
    if any overlaps; budgets and read-only are the caller's to check on the merged result.
    """
    merged: dict[str, object] = {}
    hunks: list[dict[str, object]] = []
    violations: list[tuple[str, str]] = []
    for name, proposed in changes.items():
        if name == "value":
            result = merge_text(base.value, current.value, str(proposed))
            for hunk in result.conflicts:
                hunks.append({"field": "value", **hunk.as_dict()})
                violations.append(("block.value", hunk.describe()))
            merged[name] = result.text
            continue
        outcome = merge_field(name, getattr(base, name), getattr(current, name), proposed)
        if isinstance(outcome, FieldConflict):
            hunks.append(_field_hunk(outcome))
            violations.append((f"block.{name}", _field_conflict(outcome)))
        else:
            merged[name] = outcome
    if violations:
        raise MergeConflict(
            f"Block '{current.label}'",
            base_version=base.version,
            current_version=current.version,
            hunks=hunks,
            violations=violations,
        )
    return merged


def _field_hunk(conflict: FieldConflict) -> dict[str, object]:
    return {
        "field": conflict.field,
        "base": str(conflict.base),
        "current": str(conflict.current),
        "proposed": str(conflict.proposed),
    }


def _field_conflict(conflict: FieldConflict) -> str:
    return (
        f"set to {conflict.current!r} since the base (was {conflict.base!r}) where this edit sets "
        f"{conflict.proposed!r}"
    )


def _joined(lines: Iterable[str]) -> str:
    return "".join(lines)
