"""``strata blocks list|get|create|update|delete|attach|detach|history|diff|restore``.

A block is named by ``--id BLOCK`` or by ``--agent AGENT --label LABEL``.
"""

from __future__ import annotations

import argparse

from strata.cli.commands import (
    Subparsers,
    UsageError,
    add_block_selector,
    add_text_option,
    block_selector,
    command,
    group,
    key_values,
    text_option,
)
from strata.cli.output import Printer, compact, timestamp
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


def register(subparsers: Subparsers) -> None:
    commands = group(subparsers, "blocks", "core memory blocks: contents, sharing and history")

    listing = command(
        commands, "list", "an agent's blocks in render order, or every block of the tenant", _list
    )
    listing.add_argument(
        "--agent", dest="agent_id", metavar="AGENT", default="", help="only this agent's blocks"
    )

    add_block_selector(command(commands, "get", "show a block and its value", _get))

    create = command(commands, "create", "create a block, attached to --agent if given", _create)
    create.add_argument("--label", required=True)
    create.add_argument(
        "--agent", dest="agent_id", metavar="AGENT", default="", help="attach it to this agent"
    )
    _add_fields(create)

    update = command(commands, "update", "change the fields given as options", _update)
    add_block_selector(update)
    _add_fields(update)
    update.add_argument("--rename", metavar="LABEL", help="give the block a new label")
    update.add_argument("--writable", action="store_true", help="clear read-only")
    update.add_argument("--etag", default="", help="apply only if the block's etag is still this")
    update.add_argument(
        "--based-on",
        dest="base_etag",
        default="",
        metavar="ETAG",
        help="the new fields were made from that version: merge them onto changes made since "
        "(overlapping lines fail with the conflicting hunks)",
    )
    update.add_argument(
        "--dry-run", action="store_true", help="check (and merge) without writing; show the result"
    )

    delete = command(commands, "delete", "delete a block", _delete)
    add_block_selector(delete)
    delete.add_argument("--etag", default="")

    for name, run, help_text in (
        ("attach", _attach, "share a block with an agent"),
        ("detach", _detach, "remove a block from an agent's memory"),
    ):
        sharing = command(commands, name, help_text, run)
        sharing.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
        sharing.add_argument("--id", dest="block_id", metavar="BLOCK", required=True)

    add_block_selector(command(commands, "history", "the block's versions, newest first", _history))

    diff = command(commands, "diff", "unified diff between two versions", _diff)
    add_block_selector(diff)
    diff.add_argument("--from", dest="from_version", type=int, required=True, metavar="VERSION")
    diff.add_argument(
        "--to", dest="to_version", type=int, default=0, metavar="VERSION", help="default: current"
    )

    restore = command(commands, "restore", "write a new version with an old version's content", _restore)
    add_block_selector(restore)
    restore.add_argument("--version", type=int, required=True)
    restore.add_argument("--etag", default="")


def _add_fields(parser: argparse.ArgumentParser) -> None:
    add_text_option(parser, "value", "the block's text")
    parser.add_argument("--limit", type=int, help="character budget")
    parser.add_argument("--description")
    parser.add_argument("--read-only", action="store_true", help="the agent's tools may not edit it")
    parser.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata entry (repeatable)")


def _fields(args: argparse.Namespace) -> tuple[pb.Block, list[str]]:
    """The block fields given on the command line, and their update_mask paths."""
    block, paths = pb.Block(), []
    value = text_option(args, "value")
    if value is not None:
        block.value = value
        paths.append("value")
    if args.limit is not None:
        block.limit = args.limit
        paths.append("limit")
    if args.description is not None:
        block.description = args.description
        paths.append("description")
    if args.read_only or getattr(args, "writable", False):
        block.read_only = args.read_only
        paths.append("read_only")
    if args.meta:
        block.metadata.update(key_values(args.meta, "--meta"))
        paths.append("metadata")
    if getattr(args, "rename", None):
        block.label = args.rename
        paths.append("label")
    return block, paths


def _list(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = list(client.iter_blocks(agent_id=args.agent_id))
    out.show(
        api.ListBlocksResponse(blocks=found),
        lambda: out.table(
            ["ID", "LABEL", "CHARS", "RO", "VERSION", "DESCRIPTION"],
            [
                (
                    b.id,
                    b.label,
                    f"{b.chars_current}/{b.limit}",
                    "yes" if b.read_only else "",
                    b.version,
                    b.description,
                )
                for b in found
            ],
        ),
    )


def _get(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.get_block(**block_selector(args)))


def _create(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    block, _ = _fields(args)
    block.label = args.label
    _show(out, client.create_block(block=block, agent_id=args.agent_id))


def _update(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    if args.read_only and args.writable:
        raise UsageError("--read-only and --writable contradict each other")
    block, paths = _fields(args)
    if not paths:
        raise UsageError("nothing to update: give at least one field option")
    updated = client.update_block(
        block=block,
        update_mask=paths,
        etag=args.etag,
        base_etag=args.base_etag,
        validate_only=args.dry_run,
        **block_selector(args),
    )
    _show(out, updated)


def _delete(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    ref = block_selector(args)
    client.delete_block(etag=args.etag, **ref)
    out.line("{}" if out.as_json else f"deleted {ref['block_id'] or ref['label']}")


def _attach(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    agent = client.attach_block(agent_id=args.agent_id, block_id=args.block_id)
    out.show(agent, lambda: out.line(f"{agent.id} blocks: {', '.join(agent.block_labels)}"))


def _detach(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    agent = client.detach_block(agent_id=args.agent_id, block_id=args.block_id)
    out.show(agent, lambda: out.line(f"{agent.id} blocks: {', '.join(agent.block_labels) or '(none)'}"))


def _history(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    versions = list(client.iter_block_versions(**block_selector(args)))
    out.show(
        api.ListBlockVersionsResponse(versions=versions),
        lambda: out.table(
            ["VERSION", "TIME", "SOURCE", "ACTOR", "CHARS", "VALUE"],
            [
                (v.version, timestamp(v.change_time), v.source, v.actor, len(v.value), v.value)
                for v in versions
            ],
        ),
    )


def _diff(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = client.diff_block_versions(
        from_version=args.from_version, to_version=args.to_version, **block_selector(args)
    )
    out.show(found, lambda: out.text(found.diff or "(no differences)"))


def _restore(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.restore_block_version(version=args.version, etag=args.etag, **block_selector(args)))


def _show(out: Printer, block: pb.Block) -> None:
    def human() -> None:
        out.fields(
            [
                ("id", block.id),
                ("label", block.label),
                ("chars", f"{block.chars_current}/{block.limit}"),
                ("read only", "yes" if block.read_only else "no"),
                ("description", block.description or "-"),
                ("metadata", compact(dict(block.metadata)) if block.metadata else "-"),
                ("version", block.version),
                ("updated", timestamp(block.update_time)),
                ("etag", block.etag),
            ]
        )
        out.line("value:")
        out.text(block.value)

    out.show(block, human)
