"""Compiled system prompts, one per agent and conversation, and the snapshots they are built from.

A prompt row holds its whole text (a single conversation's recompile), or points at a snapshot: the
system text, rendered memory, counts and time one recompile of the agent read, stored once and shared
by every conversation (an edit writes one snapshot, not one prompt per conversation). The text of a
snapshot-backed prompt is assembled by the caller (``operations/prompts.py``).

An agent has one snapshot row, whose id is the agent's id: a recompile rewrites it in place, and the
prompt rows only move when one does not point at it yet (snapshots written before this rule had ids
of their own; the first recompile of such an agent drops them).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, func, insert, literal, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping

from strata_memory.domain.errors import ConversationNotFound
from strata_memory.domain.receipts import PromptReceipt
from strata_memory.store import schema
from strata_memory.store.glance import Statement
from strata_memory.store.receipts import receipt_from_row, save_receipt
from strata_memory.store.records import PromptRecord

_prompts = schema.system_prompts
_WHERE = (
    _prompts.c.agent_id == bindparam("agent_id"),
    _prompts.c.conversation_id == bindparam("conversation_id"),
)
_PROMPT = select(_prompts).where(*_WHERE)
_DELETE_PROMPT = delete(_prompts).where(*_WHERE)
_INSERT_PROMPT = insert(_prompts)
_snapshots = schema.prompt_snapshots
_SNAPSHOT = select(_snapshots).where(_snapshots.c.id == bindparam("snapshot_id"))
_INSERT_SNAPSHOT = insert(_snapshots)
_conversations = schema.conversations
_REWRITE_SNAPSHOT = update(_snapshots).where(_snapshots.c.id == bindparam("for_agent"))
# The same, only while every conversation of the agent has a prompt row pointing at the snapshot (whose
# id is the agent's) already: then that rewrite is all a recompile sends.
_REWRITE_POINTED_SNAPSHOT = _REWRITE_SNAPSHOT.where(
    select(func.count())
    .select_from(
        _conversations.outerjoin(
            _prompts,
            and_(
                _prompts.c.agent_id == _conversations.c.agent_id,
                _prompts.c.conversation_id == _conversations.c.id,
            ),
        )
    )
    .where(
        _conversations.c.agent_id == bindparam("for_agent"),
        _prompts.c.snapshot_id.is_distinct_from(bindparam("for_agent")),
    )
    .scalar_subquery()
    == 0
)


def _point_every_conversation(insert_for_dialect: Any) -> Any:
    """Every conversation of the agent gets a prompt row pointing at ``new_id``, in one statement: rows
    are inserted for conversations without one, and rows pointing elsewhere (or holding their own text)
    are rewritten; rows already pointing there are left alone. PostgreSQL and SQLite spell the upsert
    alike (``ON CONFLICT … DO UPDATE … WHERE``) but SQLAlchemy builds it per dialect."""
    statement = insert_for_dialect(_prompts).from_select(
        ["agent_id", "conversation_id", "text", "fingerprint", "compiled_us", "snapshot_id"],
        select(
            _conversations.c.agent_id,
            _conversations.c.id,
            literal(""),
            literal(""),
            bindparam("at_us"),
            bindparam("new_id"),
        ).where(_conversations.c.agent_id == bindparam("for_agent")),
    )
    return statement.on_conflict_do_update(
        index_elements=[_prompts.c.agent_id, _prompts.c.conversation_id],
        set_={
            "text": "",
            "fingerprint": "",
            "receipt_id": None,  # the snapshot's receipt is the prompt's
            "compiled_us": statement.excluded.compiled_us,
            "snapshot_id": statement.excluded.snapshot_id,
        },
        where=_prompts.c.snapshot_id.is_distinct_from(statement.excluded.snapshot_id),
    )


_POINT_EVERY_CONVERSATION = {
    "sqlite": _point_every_conversation(sqlite.insert),
    "postgresql": _point_every_conversation(postgresql.insert),
}

# Snapshots of the agent no prompt row points at any more.
_DROP_UNUSED = delete(_snapshots).where(
    _snapshots.c.agent_id == bindparam("for_agent"),
    _snapshots.c.id.not_in(
        select(_prompts.c.snapshot_id).where(
            _prompts.c.agent_id == bindparam("for_agent"), _prompts.c.snapshot_id.is_not(None)
        )
    ),
)

# What <memory_metadata> counts, in one statement: the agent's messages and the passages of every
# archive attached to it (the tags only when there are passages), and its files (read only when it has
# some). Each is a scalar subquery of the ``agent_id`` parameter, so other statements can carry them.
# Messages and passages are counted where they are written (``agents.message_count``, kept by the
# statement that numbers an agent's messages, and ``archives.passage_count``): reading them costs the
# same at any history length, where counting the rows grows with it (bench/perf/findings.md).
_agent_archives = select(schema.archive_agents.c.archive_id).where(
    schema.archive_agents.c.agent_id == bindparam("agent_id")
)
_counted = schema.agents.alias("counted")  # never correlated with an ``agents`` the carrier reads
COUNTS = {
    "messages": select(_counted.c.message_count)
    .where(_counted.c.id == bindparam("agent_id"))
    .scalar_subquery(),
    "passages": select(func.coalesce(func.sum(schema.archives.c.passage_count), 0))
    .where(schema.archives.c.id.in_(_agent_archives))
    .scalar_subquery(),
    "files": select(func.count())
    .select_from(schema.files)
    .where(schema.files.c.agent_id == bindparam("agent_id"))
    .scalar_subquery(),
}
_COUNT_COLUMNS = tuple(count.label(name) for name, count in COUNTS.items())
_COUNTS = select(*_COUNT_COLUMNS)
_TAGS = (  # each archive's distinct tags, kept beside its passages (not read from every passage's)
    select(schema.archive_tags.c.tag)
    .distinct()
    .where(schema.archive_tags.c.archive_id.in_(_agent_archives))
    .order_by(schema.archive_tags.c.tag)
)

# A conversation with its stored prompt, the snapshot that prompt points at, the receipt of either and
# the agent's counts, in one statement (the prompt, snapshot and receipt columns are NULL when there is
# none).
_receipt = schema.prompt_receipts.alias("receipt")
_due = _snapshots.alias("due")  # the agent's own snapshot, whichever the conversation points at
_CONVERSATION_PROMPT = (
    select(
        _prompts.c.text,
        _prompts.c.fingerprint,
        _prompts.c.compiled_us.label("prompt_us"),
        _prompts.c.snapshot_id,
        *(column.label(f"receipt_{column.name}") for column in _receipt.c),
        _snapshots.c.system,
        _snapshots.c.memory,
        _snapshots.c.timezone,
        _snapshots.c.message_count,
        _snapshots.c.passage_count,
        _snapshots.c.tags,
        _snapshots.c.compiled_us.label("snapshot_us"),
        select(_due.c.due_us).where(_due.c.id == bindparam("agent_id")).scalar_subquery().label("due_us"),
        *_COUNT_COLUMNS,
    )
    .select_from(
        _conversations.outerjoin(
            _prompts,
            and_(
                _prompts.c.agent_id == _conversations.c.agent_id,
                _prompts.c.conversation_id == _conversations.c.id,
            ),
        )
        .outerjoin(_snapshots, _snapshots.c.id == _prompts.c.snapshot_id)
        .outerjoin(_receipt, _receipt.c.id == func.coalesce(_snapshots.c.receipt_id, _prompts.c.receipt_id))
    )
    .where(
        _conversations.c.agent_id == bindparam("agent_id"),
        _conversations.c.id == bindparam("conversation_id"),
    )
)


@dataclass(frozen=True, slots=True)
class MemoryCounts:
    """What the prompt's metadata reports beside core memory, and how many files the agent has."""

    messages: int
    passages: int
    tags: list[str]
    files: int = 0


def memory_counts(conn: Connection, agent_id: str) -> MemoryCounts:
    """Messages stored for the agent, passages in its archives and their distinct tags (sorted), files."""
    return counts_with_tags(conn, agent_id, *conn.execute(_COUNTS, {"agent_id": agent_id}).one())


def counts_with_tags(
    conn: Connection, agent_id: str, messages: int, passages: int, files: int
) -> MemoryCounts:
    """The counts :data:`COUNTS` read, with the tags of the agent's passages (read only if it has some)."""
    tags = list(conn.execute(_TAGS, {"agent_id": agent_id}).scalars()) if passages else []
    return MemoryCounts(int(messages), int(passages), tags, int(files))


@dataclass(frozen=True, slots=True)
class PromptSnapshot:
    """What one recompile of an agent read: every conversation's prompt is assembled from it."""

    system: str
    memory: str
    timezone: str
    message_count: int
    passage_count: int
    tags: tuple[str, ...]
    compiled_us: int
    receipt: PromptReceipt | None = None
    """What the snapshot was built from; None for snapshots stored before receipts were recorded."""


def get_prompt(conn: Connection, agent_id: str, conversation_id: str) -> PromptRecord | PromptSnapshot | None:
    """The stored prompt: its text, or the snapshot to assemble it from; None if there is none (its
    receipt is not read: :func:`conversation_prompt` reads it)."""
    params = {"agent_id": agent_id, "conversation_id": conversation_id}
    row = conn.execute(_PROMPT, params).mappings().first()
    if row is None:
        return None
    if row["snapshot_id"] is not None:
        found = conn.execute(_SNAPSHOT, {"snapshot_id": row["snapshot_id"]}).mappings().one()
        return _snapshot(found, found["compiled_us"])
    return PromptRecord(
        row["agent_id"], row["conversation_id"], row["text"], row["fingerprint"], row["compiled_us"]
    )


def conversation_prompt(
    conn: Connection, agent_id: str, conversation_id: str
) -> tuple[PromptRecord | PromptSnapshot | None, MemoryCounts, bool]:
    """As :func:`get_prompt` and :func:`memory_counts` together, and whether a recompile of the agent
    is due (:func:`defer_recompile`), in one statement (two with tags), raising ConversationNotFound
    for an unknown conversation."""
    params = {"agent_id": agent_id, "conversation_id": conversation_id}
    row = conn.execute(_CONVERSATION_PROMPT, params).mappings().first()
    if row is None:
        raise ConversationNotFound(agent_id, conversation_id)
    counts = counts_with_tags(conn, agent_id, row["messages"], row["passages"], row["files"])
    due = bool(row["due_us"])
    if row["prompt_us"] is None:
        return None, counts, due
    receipt = None
    if row["receipt_id"] is not None:
        receipt = receipt_from_row(
            {k.removeprefix("receipt_"): v for k, v in row.items() if k.startswith("receipt_")}
        )
    if row["snapshot_id"] is not None:
        return _snapshot(row, row["snapshot_us"], receipt), counts, due
    stored = PromptRecord(
        agent_id, conversation_id, row["text"], row["fingerprint"], row["prompt_us"], receipt
    )
    return stored, counts, due


def _snapshot(row: RowMapping, compiled_us: int, receipt: PromptReceipt | None = None) -> PromptSnapshot:
    return PromptSnapshot(
        system=row["system"],
        memory=row["memory"],
        timezone=row["timezone"],
        message_count=int(row["message_count"]),
        passage_count=int(row["passage_count"]),
        tags=tuple(str(tag) for tag in row["tags"]),
        compiled_us=int(compiled_us),
        receipt=receipt,
    )


def save_prompt(conn: Connection, prompt: PromptRecord) -> None:
    """Store one conversation's prompt text (a snapshot it pointed at is dropped if now unused)."""
    where = {"agent_id": prompt.agent_id, "conversation_id": prompt.conversation_id}
    conn.execute(_DELETE_PROMPT, where)
    conn.execute(
        _INSERT_PROMPT,
        {
            **where,
            "text": prompt.text,
            "fingerprint": prompt.fingerprint,
            "compiled_us": prompt.compiled_us,
            "snapshot_id": None,
            "receipt_id": _saved(conn, prompt.receipt),
        },
    )
    conn.execute(_DROP_UNUSED, {"for_agent": prompt.agent_id})


def _saved(conn: Connection, receipt: PromptReceipt | None) -> str | None:
    return None if receipt is None else save_receipt(conn, receipt)


def save_snapshot(conn: Connection, agent_id: str, snapshot: PromptSnapshot) -> None:
    """Make ``snapshot`` the prompt of every conversation of the agent, whatever their number: one
    statement when the agent's snapshot row is rewritten and every conversation points at it already;
    otherwise (conversations created since, or given a prompt of their own by a recompile of that
    conversation alone, or no snapshot row yet) two more, to write the row and point them at it."""
    values = {
        "system": snapshot.system,
        "memory": snapshot.memory,
        "timezone": snapshot.timezone,
        "message_count": snapshot.message_count,
        "passage_count": snapshot.passage_count,
        "tags": list(snapshot.tags),
        "compiled_us": snapshot.compiled_us,
        "receipt_id": _saved(conn, snapshot.receipt),
        "due_us": 0,  # whatever was deferred is compiled now
    }
    rewrite = {"for_agent": agent_id, **values}
    if conn.execute(_REWRITE_POINTED_SNAPSHOT, rewrite).rowcount == 1:
        return
    rewritten = conn.execute(_REWRITE_SNAPSHOT, rewrite).rowcount == 1
    if not rewritten:
        conn.execute(_INSERT_SNAPSHOT, {"id": agent_id, "agent_id": agent_id, **values})
    params = {"for_agent": agent_id, "new_id": agent_id, "at_us": snapshot.compiled_us}
    conn.execute(_POINT_EVERY_CONVERSATION[conn.dialect.name], params)
    if not rewritten:  # snapshots with ids of their own, from before one row per agent
        conn.execute(_DROP_UNUSED, {"for_agent": agent_id})


def defer_recompile(conn: Connection, agent_id: str, at_us: int) -> bool:
    """Mark the agent's snapshot as due for a recompile at its next read (the first deferred change's
    time is kept); one statement whatever the agent holds. False if the agent has no snapshot yet."""
    due = case((_snapshots.c.due_us == 0, at_us), else_=_snapshots.c.due_us)
    marked = conn.execute(update(_snapshots).where(_snapshots.c.id == agent_id).values(due_us=due))
    return bool(marked.rowcount)


def recompile_due(conn: Connection, agent_id: str) -> bool:
    """Whether a recompile of the agent's prompt was deferred (:func:`defer_recompile`)."""
    due = conn.execute(select(_snapshots.c.due_us).where(_snapshots.c.id == agent_id)).scalar()
    return bool(due)


def share_snapshot(conn: Connection, agent_id: str, conversation_id: str) -> bool:
    """Give a new conversation the prompt every conversation of the agent shares: a row pointing at the
    agent's snapshot (no text of its own), in one statement. False (nothing written) if the agent has
    no snapshot or its snapshot waits for a deferred recompile."""
    shared = conn.execute(
        insert(_prompts).from_select(
            ["agent_id", "conversation_id", "text", "fingerprint", "compiled_us", "snapshot_id"],
            select(
                _snapshots.c.agent_id,
                literal(conversation_id),
                literal(""),
                literal(""),
                _snapshots.c.compiled_us,
                _snapshots.c.id,
            ).where(_snapshots.c.id == agent_id, _snapshots.c.due_us == 0),
        )
    )
    return bool(shared.rowcount)


# Everything a conversation's prompt as read (``operations.prompts.Prompts.get``) is a function of,
# except its blocks' values (their stamps stand for them: ``store.blocks.memory_stamps``) and files:
# the columns themselves, read on a raw connection (``store.glance``) to key a kept reply.
_AGENT_ROW = Statement(
    select(schema.agents).where(
        schema.agents.c.id == bindparam("agent_id"), schema.agents.c.tenant_id == bindparam("tenant_id")
    )
)
_CONVERSATION_PROMPT_ROW = Statement(_CONVERSATION_PROMPT)
_TAG_ROWS = Statement(_TAGS)


@dataclass(frozen=True, slots=True)
class PromptInputs:
    """The rows a prompt read depends on, as plain tuples (a key); ``cacheable`` is False when the read
    would compile (nothing stored, or a deferred recompile due) or the agent has files."""

    agent: tuple[Any, ...]
    prompt: tuple[Any, ...]
    tags: tuple[Any, ...]
    cacheable: bool


def prompt_inputs(
    raw: sqlite3.Connection, tenant_id: str, agent_id: str, conversation_id: str
) -> PromptInputs | None:
    """The inputs of the tenant's agent's conversation prompt; None when either is missing."""
    agent = _AGENT_ROW.rows(raw, {"agent_id": agent_id, "tenant_id": tenant_id})
    params = {"agent_id": agent_id, "conversation_id": conversation_id}
    prompt = _CONVERSATION_PROMPT_ROW.rows(raw, params) if agent else []
    if not prompt:
        return None
    columns = dict(zip(_CONVERSATION_PROMPT_ROW.columns, prompt[0], strict=True))
    tags = tuple(r[0] for r in _TAG_ROWS.rows(raw, {"agent_id": agent_id})) if columns["passages"] else ()
    cacheable = columns["prompt_us"] is not None and not columns["due_us"] and not columns["files"]
    return PromptInputs(tuple(agent[0]), tuple(prompt[0]), tags, cacheable)
