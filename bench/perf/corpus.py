"""Synthetic chat-length documents and queries built from the shared evaluation data.

Documents are windows of 12-20 consecutive words cut from the SciFact abstracts, taken at several
offsets so they are distinct (about 20 words, like a chat message), interleaved with the LoCoMo
dialogue turns. Queries are the 300 SciFact claims and the LoCoMo questions, alternating. Both are
deterministic, so every run indexes and asks the same texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

DATA_DIR = Path("/work/shared/data")
WINDOW_WORDS = (12, 16, 20)  # one window length per pass, so passes cut different boundaries
OFFSETS = (0, 5, 11)


def _abstract_words() -> list[list[str]]:
    with (DATA_DIR / "scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        return [f"{row['title']}. {row['text']}".split() for row in map(json.loads, lines)]


def _locomo_turns() -> list[str]:
    turns: list[str] = []
    for path in sorted((DATA_DIR / "locomo" / "turns").glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            turns += [one_line(f"{row['speaker']}: {row['text']}") for row in map(json.loads, lines)]
    return turns


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks, U+2028, ...) as one space.

    The corpus is stored one document a line and read back with ``str.splitlines``, which also
    splits at Unicode line separators; two LoCoMo turns hold one, which shifted every later line.
    """
    return " ".join(text.split())


def _windows(abstracts: list[list[str]]) -> Iterator[str]:
    passes = [(size, offset) for offset in OFFSETS for size in WINDOW_WORDS]
    for first, second in zip(passes[0::2], passes[1::2], strict=False):
        for words in abstracts:
            for size, offset in (first, second):
                for start in range(offset, len(words) - size // 2, size):
                    yield " ".join(words[start : start + size])


def chat_documents(count: int) -> list[str]:
    """``count`` distinct chat-length texts (raises if the data cannot supply that many)."""
    turns = iter(_locomo_turns())
    seen: set[str] = set()
    texts: list[str] = []
    for i, window in enumerate(_windows(_abstract_words())):
        for text in (window, next(turns, None) if i % 20 == 0 else None):
            if text and text not in seen:
                seen.add(text)
                texts.append(text)
        if len(texts) >= count:
            return texts[:count]
    raise ValueError(f"the shared data yields only {len(texts)} distinct documents, not {count}")


def queries(count: int) -> list[str]:
    """``count`` questions: SciFact claims and LoCoMo questions, alternating."""
    with (DATA_DIR / "scifact" / "queries.jsonl").open(encoding="utf-8") as lines:
        claims = [row["text"] for row in map(json.loads, lines)]
    questions: list[str] = []
    for path in sorted((DATA_DIR / "locomo" / "questions").glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            questions += [row["question"] for row in map(json.loads, lines)]
    mixed = [q for pair in zip(claims, questions, strict=False) for q in pair]
    return (mixed * (count // max(len(mixed), 1) + 1))[:count]
