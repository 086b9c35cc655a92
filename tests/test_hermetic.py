"""The suite keeps to itself (tests/hermetic.py): run as a developer would with ``make run`` up and
their ``STRATA_*`` variables exported, representative server-starting tests still pass and never
connect to the default ports.

A pytest child process runs one test of each kind of fixture — MemoryService alone (it reaches for
RetrievalService), both services with a real embedder, the MemFS session server — while listeners
here stand on 127.0.0.1:50051 and :50052 (sharing the port through SO_REUSEPORT when a ``make run``
already holds it) and on the free ports the exported variables name. A connection counts against
the suite only when the socket it came from belongs to the child or a process it started (read from
/proc), so another program's traffic to the default ports changes nothing here. The exported
variables would also break the run if they were read (auth switched on, a RetrievalService key).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.hermetic import scrub_environment

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PORTS = (50051, 50052)  # MemorySettings.address / retrieval_address, RetrievalSettings.address
REPRESENTATIVE = (
    # MemoryService alone: conversation_search calls RetrievalService and must find it unreachable
    "tests/memory/integration/test_tools.py::test_refused_edits_are_error_results_that_change_nothing[sqlite]",
    # both services, real embedder: passages indexed (outbox), waited for, searched
    "tests/client/test_archival.py::test_archives_passages_and_search",
    # the MemFS session server, driven by the CLI in-process
    "tests/memfs/test_round_trip.py::test_clone_writes_one_file_per_block_with_front_matter_and_commits",
)


def _proc_tcp_inode(local_port: int, remote_port: int) -> int | None:
    """The inode of the loopback socket 127.0.0.1:local_port -> 127.0.0.1:remote_port, IPv4 or (as
    gRPC opens them) IPv6 with v4-mapped addresses."""
    for table, host in (("tcp", "0100007F"), ("tcp6", "0000000000000000FFFF00000100007F")):
        local, remote = f"{host}:{local_port:04X}", f"{host}:{remote_port:04X}"
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return int(fields[9])
    return None


def _descendants(root_pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    family = {root_pid}
    grew = True
    while grew:
        grown = family | {pid for pid, parent in parents.items() if parent in family}
        grew, family = grown != family, grown
    return family


def _owned_by(inode: int, pids: set[int]) -> bool:
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if str(fd.readlink()) == target:
                    return True
            except OSError:
                continue
    return False


@dataclass
class Sentinel:
    """A listener that accepts, says nothing, and notes connections from ``child_pid``'s processes."""

    port: int = 0
    child_pid: int = 0
    ours: list[int] = field(default_factory=list)
    others: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._sock.bind(("127.0.0.1", self.port))
        except OSError:  # held (a `make run`, whose gRPC servers set SO_REUSEPORT): share it
            self._sock.close()
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                connection, (_, peer_port) = self._sock.accept()
            except TimeoutError:
                continue
            self._held.append(connection)  # kept open and silent: the caller waits, then gives up
            inode = _proc_tcp_inode(peer_port, self.port)
            family = _descendants(self.child_pid) if self.child_pid else set()
            mine = inode is not None and _owned_by(inode, family)
            (self.ours if mine else self.others).append(peer_port)

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=10)
        self._sock.close()
        for connection in self._held:
            connection.close()


def test_scrub_removes_service_settings_and_keeps_the_suites_knobs() -> None:
    environ = {
        "STRATA_MEMORY_AUTH_ENABLED": "true",
        "STRATA_RETRIEVAL_ADDRESS": "127.0.0.1:50052",
        "STRATA_API_KEY": "sk_x",
        "STRATA_FUZZ_EXAMPLES": "50",
        "PATH": "/bin",
    }
    removed = scrub_environment(environ)
    assert removed == ["STRATA_API_KEY", "STRATA_MEMORY_AUTH_ENABLED", "STRATA_RETRIEVAL_ADDRESS"]
    assert environ == {"STRATA_FUZZ_EXAMPLES": "50", "PATH": "/bin"}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_suite_passes_beside_make_run_and_never_touches_the_default_ports() -> None:
    defaults = [Sentinel(port) for port in DEFAULT_PORTS]
    exported = [Sentinel(), Sentinel()]
    developer = {
        "STRATA_MEMORY_ADDRESS": exported[0].address,
        "STRATA_MEMORY_TARGET": exported[0].address,
        "STRATA_MEMORY_RETRIEVAL_ADDRESS": exported[1].address,
        "STRATA_RETRIEVAL_ADDRESS": exported[1].address,
        "STRATA_MEMORY_AUTH_ENABLED": "true",
        "STRATA_RETRIEVAL_API_KEY": "developer-key-0123456789",
        "STRATA_TENANT": "the-developers-tenant",
    }
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *REPRESENTATIVE],
            cwd=ROOT,
            env=os.environ | developer,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for sentinel in (*defaults, *exported):
            sentinel.child_pid = child.pid
        output, _ = child.communicate(timeout=540)
    finally:
        for sentinel in (*defaults, *exported):
            sentinel.close()
    assert child.returncode == 0, output
    assert f"{len(REPRESENTATIVE)} passed" in output, output
    touched = {sentinel.address: sentinel.ours for sentinel in (*defaults, *exported) if sentinel.ours}
    assert touched == {}, f"the suite connected to {touched}"
