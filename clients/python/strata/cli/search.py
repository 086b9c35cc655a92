"""``strata search archival|messages QUERY`` and ``strata reindex`` (with a progress bar)."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from strata.cli.commands import Subparsers, command, group
from strata.cli.output import MESSAGE_ROLES, Printer, choice_name
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

SEARCH_MODES = {
    "hybrid": api.SEARCH_MODE_HYBRID,
    "vector": api.SEARCH_MODE_VECTOR,
    "fts": api.SEARCH_MODE_FTS,
}
TAG_MATCHES = {"any": api.TAG_MATCH_ANY, "all": api.TAG_MATCH_ALL}


def register(subparsers: Subparsers) -> None:
    searches = group(subparsers, "search", "archival and recall search through RetrievalService")
    archival = command(searches, "archival", "passages the agent can reach, best first", _archival)
    _add_query(archival)
    archival.add_argument(
        "--tag", action="append", default=[], help="only passages with this tag (repeatable)"
    )
    archival.add_argument(
        "--match", choices=sorted(TAG_MATCHES), default="any", help="any or all of the tags"
    )
    archival.add_argument("--top-k", type=int, default=0, help="default 5, at most 100")
    messages = command(searches, "messages", "the agent's messages, best first", _messages)
    _add_query(messages)
    messages.add_argument("--role", action="append", choices=sorted(MESSAGE_ROLES), help="only these roles")
    messages.add_argument(
        "--conversation",
        dest="conversation_id",
        metavar="CONVERSATION",
        default="",
        help="default: every one",
    )
    messages.add_argument("--limit", type=int, default=0, help="default 5, at most 100")

    reindex = command(subparsers, "reindex", "rebuild RetrievalService's indexes from the store", _reindex)
    reindex.add_argument(
        "--agent", dest="agent_id", metavar="AGENT", default="", help="default: every agent of the tenant"
    )
    reindex.add_argument("--batch-size", type=int, default=0, help="documents per call (default 256)")
    reindex.add_argument("--all-tenants", action="store_true", help="every tenant (operators only)")
    reindex.add_argument("--no-progress", action="store_true", help="no progress bar (none off a terminal)")


def _add_query(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY")
    parser.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    parser.add_argument("--mode", choices=sorted(SEARCH_MODES), default="hybrid")


def _ranks(relevance: pb.Relevance) -> tuple[str, str, str]:
    vector = str(relevance.vector_rank) if relevance.HasField("vector_rank") else "-"
    fts = str(relevance.fts_rank) if relevance.HasField("fts_rank") else "-"
    return f"{relevance.score:.4f}", vector, fts  # the score the service ordered the hits by


def _archival(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = client.search_archival(
        agent_id=args.agent_id,
        query=args.query,
        mode=SEARCH_MODES[args.mode],
        tags=args.tag,
        tag_match=TAG_MATCHES[args.match],
        top_k=args.top_k,
    )
    out.show(
        found,
        lambda: out.table(
            ["SCORE", "VEC", "FTS", "TAGS", "TEXT"],
            [(*_ranks(hit.relevance), ",".join(hit.passage.tags), hit.passage.text) for hit in found.hits],
        ),
    )


def _messages(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = client.search_messages(
        agent_id=args.agent_id,
        query=args.query,
        mode=SEARCH_MODES[args.mode],
        roles=[MESSAGE_ROLES[role] for role in args.role or ()],
        conversation_id=args.conversation_id,
        limit=args.limit,
    )
    out.show(
        found,
        lambda: out.table(
            ["SCORE", "VEC", "FTS", "ROLE", "CONTENT"],
            [
                (*_ranks(hit.relevance), choice_name(MESSAGE_ROLES, hit.message.role), hit.message.content)
                for hit in found.hits
            ],
        ),
    )


def _reindex(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    last = api.ReindexProgress()
    disable = True if args.no_progress else None  # None: tqdm shows a bar only on a terminal
    with tqdm(unit="doc", desc="reindexing", disable=disable) as progress:
        for step in client.reindex(
            agent_id=args.agent_id, batch_size=args.batch_size, all_tenants=args.all_tenants
        ):
            progress.total = step.documents_total
            progress.update(step.documents_done - progress.n)
            last = step
    out.show(last, lambda: out.line(f"reindexed {last.documents_done} of {last.documents_total} document(s)"))
