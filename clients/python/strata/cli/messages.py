"""``strata messages append|list|import``: an agent's recall memory.

``import`` reads JSON Lines, one message per line, in protobuf JSON (``{"role": "user", "content":
"hi"}``; roles may be short, ``user``, or full, ``MESSAGE_ROLE_USER``). OpenAI-style tool calls
(``{"id", "type": "function", "function": {"name", "arguments"}}``) are accepted too. A line may
name its ``conversation_id``; others go to ``--conversation``. Conversations the file names are
created if missing. The whole file is parsed before the first batch is sent, so a malformed line
changes nothing; a batch the server refuses stops the import after the batches before it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from tqdm import tqdm

from strata.cli.commands import Subparsers, UsageError, command, group
from strata.cli.output import MESSAGE_ROLES, Printer, choice_name
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

MAX_BATCH = 1000
"""MemoryService accepts at most this many messages per AppendMessages call."""


def register(subparsers: Subparsers) -> None:
    commands = group(subparsers, "messages", "recall memory: an agent's conversation messages")

    append = command(commands, "append", "append one message", _append)
    append.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    append.add_argument(
        "--conversation",
        dest="conversation_id",
        metavar="CONVERSATION",
        default="",
        help="default: 'default'",
    )
    append.add_argument("--role", choices=sorted(MESSAGE_ROLES), default="user")
    append.add_argument("--content", required=True)
    append.add_argument("--name", default="", help="speaker or tool name")

    listing = command(commands, "list", "messages oldest first, with the total count", _list)
    listing.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    listing.add_argument(
        "--conversation",
        dest="conversation_id",
        metavar="CONVERSATION",
        default="",
        help="default: every one",
    )
    listing.add_argument("--role", action="append", choices=sorted(MESSAGE_ROLES), help="only these roles")

    bulk = command(commands, "import", "append the messages of a JSONL file in batches", _import)
    bulk.add_argument("file", metavar="FILE.jsonl")
    bulk.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    bulk.add_argument(
        "--conversation",
        dest="conversation_id",
        metavar="CONVERSATION",
        default="",
        help="for lines that name none",
    )
    bulk.add_argument("--batch-size", type=int, default=100, help=f"messages per call, 1-{MAX_BATCH}")
    bulk.add_argument("--no-progress", action="store_true", help="no progress bar (none off a terminal)")


def _append(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    message = pb.Message(role=MESSAGE_ROLES[args.role], content=args.content, name=args.name)
    stored = client.append_messages(
        agent_id=args.agent_id, conversation_id=args.conversation_id, messages=[message]
    ).messages[0]
    out.show(stored, lambda: out.line(f"{stored.id} #{stored.sequence} in {stored.conversation_id}"))


def _list(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    roles = [MESSAGE_ROLES[role] for role in args.role or ()]
    found = list(
        client.iter_messages(agent_id=args.agent_id, conversation_id=args.conversation_id, roles=roles)
    )

    def human() -> None:
        out.table(
            ["SEQ", "CONVERSATION", "ROLE", "CONTENT"],
            [(m.sequence, m.conversation_id, choice_name(MESSAGE_ROLES, m.role), m.content) for m in found],
        )
        out.line(f"{len(found)} message(s)")

    out.show(api.ListMessagesResponse(messages=found, total_size=len(found)), human)


def _import(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    if not 1 <= args.batch_size <= MAX_BATCH:
        raise UsageError(f"--batch-size must be between 1 and {MAX_BATCH}")
    lines = read_jsonl(Path(args.file), args.conversation_id)
    named = {conversation for conversation, _ in lines if conversation}
    existing = {c.id for c in client.iter_conversations(agent_id=args.agent_id)}
    for conversation_id in sorted(named - existing):
        client.create_conversation(agent_id=args.agent_id, conversation_id=conversation_id)
    appended = 0
    disable = True if args.no_progress else None  # None: tqdm shows a bar only on a terminal
    with tqdm(total=len(lines), unit="msg", desc="importing", disable=disable) as progress:
        for conversation_id, batch in batches(lines, args.batch_size):
            client.append_messages(agent_id=args.agent_id, conversation_id=conversation_id, messages=batch)
            appended += len(batch)
            progress.update(len(batch))
    summary = {"appended": appended, "file": args.file}
    out.line(json.dumps(summary) if out.as_json else f"appended {appended} message(s) from {args.file}")


def read_jsonl(path: Path, default_conversation: str) -> list[tuple[str, pb.Message]]:
    """Every line of the file as (conversation, message); a bad line is a ``UsageError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                found.append(parse_line(line, default_conversation))
            except (ValueError, TypeError, json_format.ParseError) as error:
                raise UsageError(f"{path}:{number}: {error}") from None
    return found


def parse_line(line: str, default_conversation: str) -> tuple[str, pb.Message]:
    """One JSONL line as (conversation, message)."""
    fields = json.loads(line)
    if not isinstance(fields, dict):
        raise TypeError("expected a JSON object")
    role = fields.get("role")
    if isinstance(role, str) and role.lower() in MESSAGE_ROLES:
        fields["role"] = pb.MessageRole.Name(MESSAGE_ROLES[role.lower()])
    if isinstance(fields.get("tool_calls"), list):
        fields["tool_calls"] = [_tool_call(call) for call in fields["tool_calls"]]
    conversation = fields.pop("conversation_id", None) or fields.pop("conversationId", None)
    message = json_format.ParseDict(fields, pb.Message())
    return str(conversation or default_conversation), message


def batches(lines: list[tuple[str, pb.Message]], size: int) -> Iterator[tuple[str, list[pb.Message]]]:
    """Runs of consecutive messages of one conversation, at most ``size`` each, in file order."""
    batch: list[pb.Message] = []
    current = ""
    for conversation_id, message in lines:
        if batch and (conversation_id != current or len(batch) == size):
            yield current, batch
            batch = []
        current = conversation_id
        batch.append(message)
    if batch:
        yield current, batch


def _tool_call(call: Any) -> Any:
    """An OpenAI ``{"function": {"name", "arguments"}}`` tool call as a Strata ``ToolCall`` dict."""
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        function = call["function"]
        return {
            "id": call.get("id", ""),
            "name": function.get("name", ""),
            "arguments": function.get("arguments", ""),
        }
    return call
