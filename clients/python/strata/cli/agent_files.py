"""``strata agents import FILE.af`` and ``strata agents export AGENT [--with-messages] -o FILE.af``.

An Agent File is Letta's ``.af`` format (docs/agent-files.md). Both commands show their progress on
stderr while the call runs (bytes, phase and elapsed time), so a large file never looks hung; the
result goes to stdout (``--json`` for the whole response).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TextIO

from strata.cli.commands import Subparsers, UsageError, command
from strata.cli.output import Printer
from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api

MIB = 1024 * 1024


def register(commands: Subparsers) -> None:
    """Add ``import`` and ``export`` to the ``agents`` group."""
    imported = command(
        commands, "import", "create the agents of a Letta Agent File (.af), all or nothing", _import
    )
    imported.add_argument("file", metavar="FILE.af", type=Path)
    imported.add_argument(
        "--wait-searchable", action="store_true", help="return once the imported messages are searchable"
    )
    imported.add_argument("--request-id", default="", help="a UUID; sending it again imports the file once")
    exported = command(commands, "export", "write an agent (and its group) as a Letta Agent File", _export)
    exported.add_argument("agent_id", metavar="AGENT")
    exported.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE.af", help="where to write"
    )
    exported.add_argument("--with-messages", action="store_true", help="include the agents' messages")


def _import(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    try:
        data = args.file.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror}") from error
    with Progress(f"importing {args.file.name} ({_size(len(data))})"):
        result = client.import_agent_file(
            agent_file=data, wait_searchable=args.wait_searchable, request_id=args.request_id
        )

    def human() -> None:
        out.table(["ID", "NAME", "BLOCKS"], [(a.id, a.name, ",".join(a.block_labels)) for a in result.agents])
        report = result.report
        out.line(
            f"{len(result.agents)} agents, {len(result.blocks)} blocks, {report.messages_imported} messages"
        )
        for title, paths in (("kept verbatim", report.kept_verbatim), ("dropped (secrets)", report.dropped)):
            if paths:
                out.line(f"{title}: {', '.join(paths)}")
        for warning in report.warnings:
            out.line(f"warning: {warning}")

    out.show(result, human)


def _export(client: MemoryClient, args: argparse.Namespace, out: Printer) -> None:
    with Progress(f"exporting {args.agent_id}"):
        result = client.export_agent_file(agent_id=args.agent_id, with_messages=args.with_messages)
    try:
        args.output.write_bytes(result.agent_file)
    except OSError as error:
        raise UsageError(f"cannot write {args.output}: {error.strerror}") from error
    out.show(
        api.ExportAgentFileResponse(agent_ids=result.agent_ids),  # the file's bytes went to the file
        lambda: out.line(
            f"wrote {args.output} ({_size(len(result.agent_file))}, agents {', '.join(result.agent_ids)})"
        ),
    )


class Progress:
    """A one-line status on stderr (``label: 2.4 s``), redrawn while a call runs, cleared at the end;
    on a stream that is not a terminal, one line at the start and one at the end."""

    def __init__(self, label: str, stream: TextIO | None = None, every: float = 0.2) -> None:
        self._label, self._stream, self._every = label, stream or sys.stderr, every
        self._done = threading.Event()
        self._started = 0.0
        self._thread = threading.Thread(target=self._redraw, daemon=True)

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self._stream.isatty():
            self._thread.start()
        else:
            print(f"{self._label} …", file=self._stream)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
        outcome = "failed" if kind is not None else "done"
        print(f"\r{self._label}: {outcome} in {self._elapsed()}", file=self._stream)

    def _redraw(self) -> None:
        while not self._done.wait(self._every):
            print(f"\r{self._label}: {self._elapsed()}", end="", file=self._stream, flush=True)

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._started:.1f} s"


def _size(count: int) -> str:
    return f"{count / MIB:.1f} MiB" if count >= MIB else f"{count:,} bytes"
