"""Starting and stopping benchmark servers as child processes, and measuring their footprint."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

READY_TIMEOUT_SECONDS = 900.0  # a start may build HNSW graphs for 100k+ vectors first


class ServerProcess:
    """``python -m bench.perf.serve ARGS`` as a child; ``address`` once it printed READY."""

    def __init__(self, args: list[str], log: Path, *, env: Mapping[str, str] | None = None) -> None:
        """``env``: variables added to this process's environment for the child (its settings)."""
        self.args = args
        self.log = log
        self.env = dict(env or {})
        self.address = ""
        self.start_seconds = 0.0
        self._process: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> ServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        with self.log.open("a") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "bench.perf.serve", *self.args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=os.environ | {"OPENBLAS_NUM_THREADS": "1"} | self.env,
            )
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], READY_TIMEOUT_SECONDS)
        line = self._process.stdout.readline() if ready else ""  # READY, or "" once it exited
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"server {self.args[0]} did not start; see {self.log}")
        self.address = line.split()[1]
        self.start_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def rss_mib(pid: int) -> dict[str, float]:
    """Resident memory now and at its peak (VmRSS, VmHWM) of a process, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return {"rss_mib": round(fields["VmRSS"], 1), "peak_rss_mib": round(fields["VmHWM"], 1)}


def disk_mib(path: Path) -> dict[str, float]:
    """Allocated (like ``du``) and apparent size of everything under ``path``, in MiB."""
    allocated = apparent = 0
    for item in path.rglob("*"):
        if item.is_file():
            stat = item.stat()
            allocated += stat.st_blocks * 512
            apparent += stat.st_size
    return {"disk_mib": round(allocated / 2**20, 1), "apparent_mib": round(apparent / 2**20, 1)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
