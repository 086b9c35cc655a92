"""``strata agents create|list|get|update|delete|import|export``."""

from __future__ import annotations

import argparse

from strata.cli import agent_files
from strata.cli.commands import (
    Subparsers,
    UsageError,
    add_text_option,
    command,
    group,
    key_values,
    text_option,
)
from strata.cli.output import (
    RECOMPILE_POLICIES,
    RENDER_MODES,
    TOOL_RESULT_STYLES,
    Printer,
    choice_name,
    timestamp,
)
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


def register(subparsers: Subparsers) -> None:
    commands = group(subparsers, "agents", "create, inspect, change and delete agents")

    create = command(
        commands, "create", "create an agent (with persona and human blocks unless --block)", _create
    )
    _add_settings(create)
    create.add_argument(
        "--block", action="append", metavar="LABEL=VALUE", help="create and attach a block (repeatable)"
    )

    command(commands, "list", "list every agent of the tenant", _list)

    get = command(commands, "get", "show one agent", _get)
    get.add_argument("agent_id", metavar="AGENT")

    update = command(commands, "update", "change the settings given as options", _update)
    update.add_argument("agent_id", metavar="AGENT")
    _add_settings(update)
    update.add_argument("--etag", default="", help="apply only if the agent's etag is still this")

    delete = command(commands, "delete", "delete an agent, its messages and its unshared blocks", _delete)
    delete.add_argument("agent_id", metavar="AGENT")
    delete.add_argument("--etag", default="", help="delete only if the agent's etag is still this")

    agent_files.register(commands)


def _add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name")
    add_text_option(parser, "system", "raw system text; {CORE_MEMORY} marks where memory goes")
    parser.add_argument("--render-mode", choices=sorted(RENDER_MODES))
    parser.add_argument("--recompile-policy", choices=sorted(RECOMPILE_POLICIES))
    parser.add_argument("--timezone", help="IANA timezone, e.g. Europe/Paris")
    parser.add_argument("--tool-result-style", choices=sorted(TOOL_RESULT_STYLES))


def _settings(args: argparse.Namespace) -> tuple[pb.Agent, list[str]]:
    """The agent fields given on the command line, and their update_mask paths."""
    agent, paths = pb.Agent(), []
    system = text_option(args, "system")
    if args.name is not None:
        agent.name = args.name
        paths.append("name")
    if system is not None:
        agent.system = system
        paths.append("system")
    if args.render_mode:
        agent.render_mode = RENDER_MODES[args.render_mode]
        paths.append("render_mode")
    if args.recompile_policy:
        agent.recompile_policy = RECOMPILE_POLICIES[args.recompile_policy]
        paths.append("recompile_policy")
    if args.timezone is not None:
        agent.timezone = args.timezone
        paths.append("timezone")
    if args.tool_result_style:
        agent.tool_result_style = TOOL_RESULT_STYLES[args.tool_result_style]
        paths.append("tool_result_style")
    return agent, paths


def _create(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    agent, _ = _settings(args)
    blocks = [
        pb.Block(label=label, value=value) for label, value in key_values(args.block, "--block").items()
    ]
    _show(out, client.create_agent(agent=agent, blocks=blocks))


def _list(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    found = list(client.iter_agents())
    out.show(
        api.ListAgentsResponse(agents=found),
        lambda: out.table(
            ["ID", "NAME", "BLOCKS", "RENDER", "RECOMPILE", "ETAG"],
            [
                (
                    a.id,
                    a.name,
                    ",".join(a.block_labels),
                    choice_name(RENDER_MODES, a.render_mode),
                    choice_name(RECOMPILE_POLICIES, a.recompile_policy),
                    a.etag,
                )
                for a in found
            ],
        ),
    )


def _get(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    _show(out, client.get_agent(agent_id=args.agent_id))


def _update(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    agent, paths = _settings(args)
    agent.id = args.agent_id
    if not paths:
        raise UsageError("nothing to update: give at least one of the setting options")
    _show(out, client.update_agent(agent=agent, update_mask=paths, etag=args.etag))


def _delete(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    client.delete_agent(agent_id=args.agent_id, etag=args.etag)
    out.line("{}" if out.as_json else f"deleted {args.agent_id}")


def _show(out: Printer, agent: pb.Agent) -> None:
    def human() -> None:
        out.fields(
            [
                ("id", agent.id),
                ("name", agent.name),
                ("tenant", agent.tenant_id),
                ("blocks", ", ".join(agent.block_labels) or "(none)"),
                ("render mode", choice_name(RENDER_MODES, agent.render_mode)),
                ("recompile", choice_name(RECOMPILE_POLICIES, agent.recompile_policy)),
                ("tool results", choice_name(TOOL_RESULT_STYLES, agent.tool_result_style)),
                ("timezone", agent.timezone),
                ("updated", timestamp(agent.update_time)),
                ("etag", agent.etag),
            ]
        )
        if agent.system:
            out.line("system:")
            out.text(agent.system)

    out.show(agent, human)
