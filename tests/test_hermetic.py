"""The suite keeps to itself (tests/hermetic.py): run as a developer would with ``make run`` up and
their ``STRATA_*`` variables exported, representative server-starting tests still pass and never
connect to the default ports.

A pytest child process runs one test of each kind of fixture — MemoryService alone (it reaches for
RetrievalService), both services with a real embedder, the MemFS session server — while listeners
here stand on 127.0.0.1:50051 and :50052 (sharing the port through SO_REUSEPORT when a ``make run``
already holds it) and on the free ports the exported variables name. A default port held by a
process that will not share it (another user's server, or one that turned SO_REUSEPORT off) is
watched instead: /proc is read every few milliseconds for the child's connections to it, which a
gRPC channel keeps open. A connection counts against the suite only when the socket it came from
belongs to the child or a process it started (read from /proc), so another program's traffic to the
default ports changes nothing here. The exported variables would also break the run if they were
read (auth switched on, a RetrievalService key).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
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


_LOOPBACK = ("0100007F", "0000000000000000FFFF00000100007F")  # 127.0.0.1 as /proc/net/tcp and tcp6 write it


def _proc_tcp_inodes(remote_port: int, local_port: int | None = None) -> list[int]:
    """The inodes of the loopback sockets connected to 127.0.0.1:remote_port (from local_port, when
    given), IPv4 or (as gRPC opens them) IPv6 with v4-mapped addresses. 0 (a closed socket in
    TIME_WAIT) is left out: it belongs to no process."""
    inodes = []
    for table, host in zip(("tcp", "tcp6"), _LOOPBACK, strict=True):
        remote = f"{host}:{remote_port:04X}"
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_host, local_hex = fields[1].rsplit(":", 1)
            if fields[2] != remote or local_host != host or int(fields[9]) == 0:
                continue
            if local_port is None or int(local_hex, 16) == local_port:
                inodes.append(int(fields[9]))
    return inodes


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


def _listener(port: int) -> socket.socket | None:
    """A socket listening on 127.0.0.1:port: its own, or sharing it through SO_REUSEPORT with a
    holder that allows it (a `make run`, whose gRPC servers set it); None when neither can be had."""
    for share in (False, True):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if share:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        sock.listen(64)
        sock.settimeout(0.1)
        return sock
    return None


@dataclass
class Sentinel:
    """Notes connections to ``port`` from ``child_pid``'s processes: as a listener that accepts and
    says nothing, or, when the port is held by a process that will not share it, by watching /proc."""

    port: int = 0
    child_pid: int = 0
    ours: list[int] = field(default_factory=list)
    others: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = _listener(self.port)
        self.listening = self._sock is not None
        if self._sock is not None:
            self.port = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._seen: set[int] = set()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._accept if self.listening else self._watch, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _family(self) -> set[int]:
        return _descendants(self.child_pid) if self.child_pid else set()

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._closing.is_set():
            try:
                connection, (_, peer_port) = self._sock.accept()
            except TimeoutError:
                continue
            self._held.append(connection)  # kept open and silent: the caller waits, then gives up
            inodes = _proc_tcp_inodes(self.port, local_port=peer_port)
            mine = bool(inodes) and _owned_by(inodes[0], self._family())
            (self.ours if mine else self.others).append(peer_port)

    def _watch(self) -> None:
        while not self._closing.wait(0.005):
            fresh = [inode for inode in _proc_tcp_inodes(self.port) if inode not in self._seen]
            if not fresh:
                continue
            family = self._family()
            for inode in fresh:
                self._seen.add(inode)
                (self.ours if _owned_by(inode, family) else self.others).append(inode)

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=10)
        if self._sock is not None:
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


def _until(condition: Callable[[], bool], deadline_seconds: float = 30) -> bool:
    deadline = time.monotonic() + deadline_seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_port_held_by_a_process_that_will_not_share_it_is_watched_for_the_childs_connections() -> None:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # no SO_REUSEPORT: nobody can share
    holder.bind(("127.0.0.1", 0))
    holder.listen(8)
    port = holder.getsockname()[1]
    sentinel = Sentinel(port)
    child = subprocess.Popen(
        [sys.executable, "-c", CONNECT_WHEN_TOLD, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert not sentinel.listening
        sentinel.child_pid = child.pid
        parents = socket.create_connection(("127.0.0.1", port))  # this process: not the child's family
        child.stdin.write("connect\n")
        child.stdin.flush()
        assert child.stdout.readline() == "connected\n"
        counted = _until(lambda: len(sentinel.ours) == 1 and len(sentinel.others) == 1)
        assert counted, (sentinel.ours, sentinel.others)
        parents.close()
    finally:
        child.communicate("close\n", timeout=30)
        sentinel.close()
        holder.close()


CONNECT_WHEN_TOLD = """
import socket, sys
assert sys.stdin.readline() == "connect\\n"
connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
sys.stdin.readline()
connection.close()
"""


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
