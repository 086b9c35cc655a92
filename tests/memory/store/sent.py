"""What the store's engines send to the database inside a block, as the statement-budget tests count it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


@contextlib.contextmanager
def recorded(engines: Sequence[Engine], keep: Callable[[str], str | None]) -> Iterator[list[str]]:
    """Every statement ``engines`` send inside the block, as ``keep`` records it (None: not recorded)."""
    sent: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if (kept := keep(statement)) is not None:
            sent.append(kept)

    for engine in engines:
        event.listen(engine, "before_cursor_execute", seen)
    try:
        yield sent
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", seen)


def first_keyword(statement: str) -> str:
    return statement.split(maxsplit=1)[0]
