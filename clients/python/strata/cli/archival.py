"""``strata archives create|list|get|delete|attach|detach`` and ``strata passages add|list|delete``."""

from __future__ import annotations

import argparse
from typing import TypedDict

from strata.cli.commands import Subparsers, UsageError, command, group, key_values
from strata.cli.output import Printer, compact, timestamp
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


def register(subparsers: Subparsers) -> None:
    archives = group(subparsers, "archives", "archival memory: shareable collections of passages")
    create = command(archives, "create", "create an archive, attached to --agent if given", _create)
    create.add_argument("--name", required=True)
    create.add_argument("--description", default="")
    create.add_argument("--agent", dest="agent_id", metavar="AGENT", default="")
    listing = command(archives, "list", "an agent's archives, or every archive of the tenant", _list)
    listing.add_argument("--agent", dest="agent_id", metavar="AGENT", default="")
    command(archives, "get", "show one archive", _get).add_argument("archive_id", metavar="ARCHIVE")
    delete = command(archives, "delete", "delete an archive and its passages", _delete)
    delete.add_argument("archive_id", metavar="ARCHIVE")
    for name, run, help_text in (
        ("attach", _attach, "share an archive with an agent"),
        ("detach", _detach, "remove an archive from an agent"),
    ):
        sharing = command(archives, name, help_text, run)
        sharing.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
        sharing.add_argument("--id", dest="archive_id", metavar="ARCHIVE", required=True)

    passages = group(subparsers, "passages", "long-term facts in archives")
    add = command(
        passages, "add", "insert a passage (into the agent's default archive without --archive)", _add
    )
    _add_owner(add)
    add.add_argument("--text", required=True)
    add.add_argument("--tag", action="append", default=[], help="repeatable")
    add.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata entry (repeatable)")
    add.add_argument("--wait", action="store_true", help="return once the passage is searchable")
    _add_owner(command(passages, "list", "passages oldest first, with the total count", _list_passages))
    remove = command(passages, "delete", "delete a passage", _delete_passage)
    remove.add_argument("passage_id", metavar="PASSAGE")


def _add_owner(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent", dest="agent_id", metavar="AGENT", default="", help="the agent (its archives)"
    )
    parser.add_argument("--archive", dest="archive_id", metavar="ARCHIVE", default="", help="one archive")


class Owner(TypedDict):
    """The client's keywords naming where passages live: an archive, or an agent's archives."""

    agent_id: str
    archive_id: str


def _owner(args: argparse.Namespace) -> Owner:
    if not args.agent_id and not args.archive_id:
        raise UsageError("name the archive with --archive, or the agent with --agent")
    return Owner(agent_id=args.agent_id, archive_id=args.archive_id)


def _create(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    archive = pb.Archive(name=args.name, description=args.description)
    _show(out, client.create_archive(archive=archive, agent_id=args.agent_id))


def _list(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = list(client.iter_archives(agent_id=args.agent_id))
    out.show(
        api.ListArchivesResponse(archives=found),
        lambda: out.table(
            ["ID", "NAME", "AGENTS", "DESCRIPTION"],
            [(a.id, a.name, ",".join(a.agent_ids), a.description) for a in found],
        ),
    )


def _get(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.get_archive(archive_id=args.archive_id))


def _delete(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    client.delete_archive(archive_id=args.archive_id)
    out.line("{}" if out.as_json else f"deleted {args.archive_id}")


def _attach(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.attach_archive(agent_id=args.agent_id, archive_id=args.archive_id))


def _detach(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.detach_archive(agent_id=args.agent_id, archive_id=args.archive_id))


def _add(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    owner = _owner(args)
    passage = pb.Passage(text=args.text, tags=args.tag, metadata=key_values(args.meta, "--meta"))
    created = client.create_passages(passages=[passage], wait_searchable=args.wait, **owner).passages[0]
    out.show(created, lambda: out.line(f"{created.id} in {created.archive_id}"))


def _list_passages(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = list(client.iter_passages(**_owner(args)))

    def human() -> None:
        out.table(
            ["ID", "ARCHIVE", "CREATED", "TAGS", "TEXT"],
            [(p.id, p.archive_id, timestamp(p.create_time), ",".join(p.tags), p.text) for p in found],
        )
        out.line(f"{len(found)} passage(s)")

    out.show(api.ListPassagesResponse(passages=found, total_size=len(found)), human)


def _delete_passage(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    client.delete_passage(passage_id=args.passage_id)
    out.line("{}" if out.as_json else f"deleted {args.passage_id}")


def _show(out: Printer, archive: pb.Archive) -> None:
    out.show(
        archive,
        lambda: out.fields(
            [
                ("id", archive.id),
                ("name", archive.name),
                ("description", archive.description or "-"),
                ("agents", compact(list(archive.agent_ids))),
                ("created", timestamp(archive.create_time)),
            ]
        ),
    )
