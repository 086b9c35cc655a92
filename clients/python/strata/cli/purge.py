"""``strata purge agent|block|passage|message ID`` and ``strata purge conversation AGENT CONVERSATION``.

A purge cannot be undone, so the command asks first (``--yes`` skips the question; without a
terminal to ask on, ``--yes`` is required). It prints the receipt: the rows or documents each store
held and deleted, and whether RetrievalService was read back with none of the purged ids found.
Exit code 0 when the receipt is verified, 1 when it is not (the store part is done; the index part
finishes through the outbox) or when the answer was not yes.
"""

from __future__ import annotations

import argparse
import sys

from strata.cli.commands import Subparsers, UsageError, command, group
from strata.cli.output import Printer, timestamp
from strata.client import MemoryClient
from strata.client.arguments import PURGE_KINDS
from strata.memory.v1 import memory_service_pb2 as api

_HELP = {
    "agent": "an agent with everything of it (blocks no other agent holds, messages, archives only it holds)",
    "block": "a block with its whole history, from every agent holding it",
    "passage": "one passage of archival memory",
    "message": "one message of recall memory",
}


def register(subparsers: Subparsers) -> None:
    purge = group(subparsers, "purge", "forget for good, with a receipt of what each store deleted")
    for kind in PURGE_KINDS[:-1]:
        target = command(purge, kind, f"purge {_HELP[kind]}", _purge)
        target.add_argument("target_id", metavar=kind.upper())
        target.set_defaults(kind=kind, agent_id="")
        _yes(target)
    conversation = command(purge, "conversation", "purge a conversation's messages and its prompt", _purge)
    conversation.add_argument("agent_id", metavar="AGENT")
    conversation.add_argument("target_id", metavar="CONVERSATION")
    conversation.set_defaults(kind="conversation")
    _yes(conversation)


def _yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def _purge(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    name = f"{args.kind} {args.agent_id + '/' if args.agent_id else ''}{args.target_id}"
    if not args.yes and not _confirmed(name):
        print(f"strata: {name} was not purged", file=sys.stderr)
        return 1
    receipt = client.purge(kind=args.kind, target_id=args.target_id, agent_id=args.agent_id)
    out.show(receipt, lambda: show_receipt(out, receipt))
    return 0 if receipt.verified else 1


def _confirmed(name: str) -> bool:
    if not sys.stdin.isatty():
        raise UsageError(f"purging {name} cannot be undone: pass --yes to confirm without a terminal")
    print(f"Purge {name} and every stored copy of it? This cannot be undone. [y/N] ", end="", file=sys.stderr)
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


def show_receipt(out: Printer, receipt: api.PurgeReceipt) -> None:
    """The receipt for people: the stores that held something, then the verdict."""
    out.line(f"purged {receipt.target} at {timestamp(receipt.purged_at)}")
    out.table(["STORE", "DELETED"], [(c.store, c.deleted) for c in receipt.counts if c.deleted])
    out.line(f"{len(receipt.document_ids)} index document(s)")
    if receipt.verified:
        out.line("verified: RetrievalService was read back by id and no index leg holds any of them")
        return
    out.line(f"NOT verified: {receipt.verification_note}")
    for document_id in receipt.remaining_ids:
        out.line(f"  still held: {document_id}")
