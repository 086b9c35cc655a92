"""``strata memfs clone|status|pull|push|sync|resolve``: an agent's memory as a git folder of Markdown files.

``clone AGENT DIR`` creates the folder; the other commands run in it (or take ``--dir``) and talk
to the server and tenant recorded at clone time (``--target``/``--tenant`` may only repeat them).
The recorded server gets the user's credentials only if it is the configured target or was
confirmed once with ``--target`` (``strata.memfs.trust``): a shared folder cannot send a key elsewhere.
``status`` exits 0; ``pull``, ``push``, ``sync`` and ``resolve`` exit 1 when a conflict, refusal
or unreadable file remains (the rest of their work is still done and committed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from strata.cli.commands import Subparsers, UsageError, command, group
from strata.cli.output import Printer
from strata.client import DEFAULT_TARGET, MemoryClient
from strata.client.arguments import API_KEY_ENV, TARGET_ENV
from strata.memfs import engine, trust
from strata.memfs.engine import MemfsError
from strata.memfs.git import GitError
from strata.memfs.projection import MAX_BLOCK_BYTES
from strata.memfs.report import Report
from strata.memfs.resolve import resolve
from strata.memfs.state import StateError, load_state

EXIT_PROBLEMS = 1


def register(subparsers: Subparsers) -> None:
    commands = group(subparsers, "memfs", "an agent's memory as a git-backed folder of Markdown files")

    clone = command(commands, "clone", "write the agent's blocks into a new git folder", _clone)
    clone.add_argument("agent_id", metavar="AGENT")
    clone.add_argument("dir", metavar="DIR", type=Path)

    status = command(
        commands, "status", "local edits, server edits and conflicts since the last sync", _status
    )
    pull = command(commands, "pull", "write server changes into the folder and commit", _pull)
    push = command(commands, "push", "send local edits to the server (conditional) and commit", _push)
    sync = command(commands, "sync", "pull, then push", _sync)
    settle = command(
        commands, "resolve", "settle conflicts: keep the folder's version, or --theirs", _resolve
    )
    settle.add_argument("paths", nargs="+", metavar="FILE", help="block files (relative to the folder)")
    settle.add_argument("--theirs", action="store_true", help="take the server's version instead")
    for parser in (status, pull, push, sync, settle):
        parser.add_argument("--dir", type=Path, default=Path(), help="the MemFS folder (default: .)")
    for parser in (push, sync):
        parser.add_argument("--prune", action="store_true", help="detach blocks whose file was deleted")
    for parser in (clone, status, pull, push, sync):
        parser.add_argument(
            "--max-block-bytes",
            type=int,
            default=MAX_BLOCK_BYTES,
            metavar="N",
            help="larger server blocks are reported, not written (default %(default)s)",
        )


def _clone(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    def run() -> list[Report]:
        report = engine.clone(
            client,
            args.agent_id,
            args.dir,
            target=args.target,
            tenant=args.tenant,
            max_block_bytes=args.max_block_bytes,
        )
        trust.confirm(args.dir, args.target)  # the server the user cloned from is one they chose
        return [report]

    return _report(out, run)


def _status(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    with _folder_client(client, args) as (folder, root):
        _report(out, lambda: [engine.status(folder, root, max_block_bytes=args.max_block_bytes)])
    return 0


def _pull(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    with _folder_client(client, args) as (folder, root):
        return _report(out, lambda: [engine.pull(folder, root, max_block_bytes=args.max_block_bytes)])


def _push(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    with _folder_client(client, args) as (folder, root):
        return _report(
            out,
            lambda: [engine.push(folder, root, prune=args.prune, max_block_bytes=args.max_block_bytes)],
        )


def _sync(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    with _folder_client(client, args) as (folder, root):
        return _report(
            out,
            lambda: _pull_then_push(folder, root, prune=args.prune, max_block_bytes=args.max_block_bytes),
        )


def _pull_then_push(client: MemoryClient, root: Path, *, prune: bool, max_block_bytes: int) -> list[Report]:
    """Both reports; the pull's conflicts and pending edits are left to the push, which re-reads both."""
    pulled = engine.pull(client, root, max_block_bytes=max_block_bytes)
    pushed = engine.push(client, root, prune=prune, max_block_bytes=max_block_bytes)
    if not pulled.applied:
        return [pushed]
    return [Report(pulled.action, pulled.agent_id, applied=pulled.applied, commit=pulled.commit), pushed]


def _resolve(client: MemoryClient, args: argparse.Namespace, out: Printer) -> int:
    with _folder_client(client, args) as (folder, root):
        paths = [_relative(root, path) for path in args.paths]
        return _report(out, lambda: [resolve(folder, root, paths, theirs=args.theirs)])


def _relative(root: Path, path: str) -> str:
    """A FILE argument as a path inside the folder: absolute ones must lie in it."""
    given = Path(path)
    if not given.is_absolute():
        return given.as_posix()
    try:
        return given.resolve().relative_to(root).as_posix()
    except ValueError:
        raise UsageError(f"{path} is not inside {root}") from None


@contextmanager
def _folder_client(client: MemoryClient, args: argparse.Namespace) -> Iterator[tuple[MemoryClient, Path]]:
    """A client for the folder's recorded server and tenant, and the folder's root."""
    root = args.dir.resolve()
    try:
        state = load_state(root)
    except StateError as error:
        raise UsageError(str(error)) from None
    given_target = args.target != os.environ.get(TARGET_ENV, DEFAULT_TARGET)
    if (given_target and args.target != state.target) or args.tenant not in (None, state.tenant):
        raise UsageError(
            f"{root} syncs agent {state.agent_id} with {state.target} "
            f"(tenant {state.tenant or 'default'}); drop --target/--tenant or clone again"
        )
    if given_target:
        trust.confirm(root, state.target)  # the user named the folder's server: remembered outside it
    elif args.target != state.target:
        _check_recorded_target(root, state.target, args)
    if (args.target, args.tenant) == (state.target, state.tenant):
        yield client, root
        return
    with MemoryClient(
        state.target,
        tenant=state.tenant,
        timeout=args.timeout,
        api_key=getattr(args, "api_key", None),
        credentials=getattr(args, "credentials", None),
    ) as recorded:
        yield recorded, root


def _check_recorded_target(root: Path, target: str, args: argparse.Namespace) -> None:
    """Credentials go only to a server the user chose (``strata.memfs.trust``): the folder's
    recorded target, when it is not this run's, must have been confirmed once, and a key is never
    sent over plaintext to a host that is not loopback unless ``--target`` names it in this run."""
    confirm_hint = f"run once with --target {target} to confirm it"
    if not trust.confirmed(root, target):
        raise UsageError(
            f"{root} names the server {target}, not your target {args.target}; MemFS sends your "
            f"credentials only to a server you chose: if you trust {target}, {confirm_hint} "
            f"(remembered in {trust.trust_path()}, outside the folder)"
        )
    has_key = bool(getattr(args, "api_key", None) or os.environ.get(API_KEY_ENV))
    if has_key and getattr(args, "credentials", None) is None and not trust.is_loopback(target):
        raise UsageError(
            f"{root} syncs with {target} without TLS: your API key would cross the network in "
            f"plain text; pass --target {target} to send it anyway, or --root-cert to use TLS"
        )


def _report(out: Printer, run: Callable[[], list[Report]]) -> int:
    """Run a command, print its reports; 0 if they are all clean, else 1."""
    try:
        reports = run()
    except (MemfsError, StateError) as error:
        raise UsageError(str(error)) from None
    except GitError as error:
        print(f"strata: memfs: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    if out.as_json:
        data = [r.as_dict() for r in reports]
        out.line(json.dumps(data[0] if len(data) == 1 else data, indent=2, ensure_ascii=False))
    else:
        for report in reports:
            for line in report.lines():
                out.line(line)
    return 0 if all(r.ok for r in reports) else EXIT_PROBLEMS
