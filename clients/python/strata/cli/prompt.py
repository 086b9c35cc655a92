"""``strata prompt show|render|diff|recompile|receipt`` and ``strata tools list|exec``."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from strata.cli.commands import Subparsers, UsageError, command, group
from strata.cli.output import RENDER_MODES, Printer
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb


def register(subparsers: Subparsers) -> None:
    prompts = group(subparsers, "prompt", "rendered memory and the compiled system prompt")

    show = command(
        prompts, "show", "the stored system prompt (and whether it is stale; --json: its receipt)", _show
    )
    _add_conversation(show)

    receipt = command(
        prompts, "receipt", "what a compiled prompt was built from (block versions, counts, time)", _receipt
    )
    receipt.add_argument("receipt_id", metavar="RECEIPT", help="SystemPrompt.receipt.id or a message's")

    render = command(prompts, "render", "core memory rendered now, in any mode", _render)
    render.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    render.add_argument("--mode", choices=sorted(RENDER_MODES), help="default: the agent's own mode")
    _add_moment(render, "as-of", "receipt", "core memory as it was then")

    diff = command(prompts, "diff", "the whole core memory's change between two moments", _diff)
    diff.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    diff.add_argument("--mode", choices=sorted(RENDER_MODES), help="default: the agent's own mode")
    _add_moment(diff, "from", "from-receipt", "the earlier moment (required)")
    _add_moment(diff, "to", "to-receipt", "the later moment (default: now)")

    recompile = command(
        prompts, "recompile", "rebuild the stored prompt from memory; prints the diff", _recompile
    )
    _add_conversation(recompile)
    recompile.add_argument("--dry-run", action="store_true", help="show the diff without saving")

    tools = group(subparsers, "tools", "the memory tools an LLM calls")
    command(tools, "list", "every memory tool and its description", _list_tools)
    execute = command(tools, "exec", "run a tool as an LLM would; exit 1 if it reports failure", _execute)
    execute.add_argument("name", metavar="NAME", help="tool name, e.g. core_memory_append")
    execute.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    execute.add_argument("--args", dest="arguments", default="{}", metavar="JSON", help="arguments as JSON")
    execute.add_argument("--conversation", dest="conversation_id", metavar="CONVERSATION", default="")
    execute.add_argument("--etag", default="", help="edit only if the target block's etag is still this")
    execute.add_argument(
        "--based-on",
        dest="base_etag",
        default="",
        metavar="ETAG",
        help="the call was written against that version of its block: merge onto changes since",
    )


def _add_conversation(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", dest="agent_id", metavar="AGENT", required=True)
    parser.add_argument(
        "--conversation",
        dest="conversation_id",
        metavar="CONVERSATION",
        default="",
        help="default: 'default'",
    )


def _show(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    prompt = client.get_system_prompt(agent_id=args.agent_id, conversation_id=args.conversation_id)

    def human() -> None:
        out.text(prompt.text)
        if prompt.stale:
            print("strata: note: memory changed since this prompt was compiled", file=sys.stderr)

    out.show(prompt, human)


def _receipt(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = client.get_prompt_receipt(receipt_id=args.receipt_id)

    def human() -> None:
        out.line(f"receipt {found.id} of agent {found.agent_id}")
        out.line(f"compiled {found.compile_time.ToJsonString()}")
        out.line(f"messages {found.message_count}, passages {found.passage_count}, files {found.file_count}")
        out.table(["BLOCK", "LABEL", "VERSION"], [(b.block_id, b.label, b.version) for b in found.blocks])

    out.show(found, human)


def _add_moment(parser: argparse.ArgumentParser, time_flag: str, receipt_flag: str, what: str) -> None:
    parser.add_argument(
        f"--{time_flag}", type=_time, metavar="TIME", help=f"{what}: an ISO 8601 time (UTC if no offset)"
    )
    parser.add_argument(
        f"--{receipt_flag}", default="", metavar="RECEIPT", help=f"{what}: a prompt receipt id"
    )


def _time(text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _render(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    mode = RENDER_MODES[args.mode] if args.mode else pb.RENDER_MODE_UNSPECIFIED
    rendered = client.render_memory(
        agent_id=args.agent_id, mode=mode, as_of=args.as_of, receipt_id=args.receipt
    )
    out.show(rendered, lambda: out.text(rendered.text))


def _diff(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    if args.__dict__["from"] is None and not args.from_receipt:
        raise UsageError("name the earlier moment: --from TIME or --from-receipt RECEIPT")
    found = client.diff_memory(
        agent_id=args.agent_id,
        mode=RENDER_MODES[args.mode] if args.mode else pb.RENDER_MODE_UNSPECIFIED,
        from_time=args.__dict__["from"],
        from_receipt_id=args.from_receipt,
        to_time=args.to,
        to_receipt_id=args.to_receipt,
    )
    out.show(found, lambda: out.text(found.diff or "(no changes)"))


def _recompile(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    result = client.recompile_system_prompt(
        agent_id=args.agent_id, conversation_id=args.conversation_id, dry_run=args.dry_run
    )

    def human() -> None:
        out.text(result.diff or "(no changes)")
        out.line("saved" if result.saved else "not saved (dry run)")

    out.show(result, human)


def _list_tools(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = client.list_tools()
    out.show(
        found,
        lambda: out.table(
            ["NAME", "RETRIEVAL", "DESCRIPTION"],
            [
                (t.name, "yes" if t.needs_retrieval else "", t.description.strip().split("\n")[0])
                for t in found.tools
            ],
        ),
    )


def _execute(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    result = client.execute_tool(
        agent_id=args.agent_id,
        tool_name=args.name,
        arguments=args.arguments,
        conversation_id=args.conversation_id,
        etag=args.etag,
        base_etag=args.base_etag,
    )

    def human() -> None:
        out.text(result.text)
        if not result.ok:
            print(f"strata: tool failed (reason: {result.reason or 'unknown'})", file=sys.stderr)

    out.show(result, human)
    return 0 if result.ok else 1
