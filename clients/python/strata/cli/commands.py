"""Pieces every command group uses: registering a command, naming a block, reading text arguments."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from strata.cli.output import Printer
from strata.client import MemoryClient

Run = Callable[[MemoryClient, argparse.Namespace, Printer], "int | None"]
"""A command: call the service, print the result; may return a non-zero exit code."""

Subparsers = Any
"""``argparse``'s private ``_SubParsersAction``; only ``add_parser`` is used."""


class BlockSelector(TypedDict):
    """The client's keywords naming a block: an id, or an agent and a label."""

    block_id: str
    agent_id: str
    label: str


class UsageError(Exception):
    """A bad command line that argparse cannot catch (e.g. an unreadable file); exit code 2."""


def command(subparsers: Subparsers, name: str, help_text: str, run: Run) -> argparse.ArgumentParser:
    """Add a sub-command that calls ``run``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(run=run)
    _json_option(parser)
    return parser


def _json_option(parser: argparse.ArgumentParser) -> None:
    """``--json`` after the command too (``strata agents list --json``), as before it: SUPPRESS
    leaves the global option's value alone unless it is given here."""
    parser.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print results as JSON"
    )


def group(subparsers: Subparsers, name: str, help_text: str) -> Subparsers:
    """Add a command group (``strata agents …``) and return its sub-command registry."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text, description=help_text)
    _json_option(parser)
    return parser.add_subparsers(dest="command", metavar="COMMAND", required=True)


def add_block_selector(parser: argparse.ArgumentParser) -> None:
    """``--id BLOCK`` or ``--agent AGENT --label LABEL``."""
    parser.add_argument("--id", dest="block_id", metavar="BLOCK", default="", help="the block's id")
    parser.add_argument(
        "--agent", dest="agent_id", metavar="AGENT", default="", help="an agent holding the block"
    )
    parser.add_argument("--label", default="", help="the block's label in that agent's memory")


def block_selector(args: argparse.Namespace) -> BlockSelector:
    """The client's block-naming keywords from ``add_block_selector``'s options."""
    if not args.block_id and not (args.agent_id and args.label):
        raise UsageError("name the block with --id, or with --agent and --label")
    return BlockSelector(block_id=args.block_id, agent_id=args.agent_id, label=args.label)


def add_text_option(parser: argparse.ArgumentParser, name: str, help_text: str) -> None:
    """``--NAME TEXT`` or ``--NAME-file PATH``, mutually exclusive."""
    options = parser.add_mutually_exclusive_group()
    options.add_argument(f"--{name}", dest=name.replace("-", "_"), help=help_text)
    options.add_argument(
        f"--{name}-file", dest=f"{name.replace('-', '_')}_file", help=f"read {name} from a file"
    )


def text_option(args: argparse.Namespace, name: str) -> str | None:
    """The value of a ``add_text_option`` pair: the text, the file's content, or ``None``."""
    key = name.replace("-", "_")
    path = getattr(args, f"{key}_file")
    if path is None:
        value: str | None = getattr(args, key)
        return value
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None


def key_values(pairs: list[str] | None, option: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments as a dict."""
    found: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} takes KEY=VALUE, got {pair!r}")
        found[key] = value
    return found
