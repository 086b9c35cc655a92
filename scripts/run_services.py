"""`make run`: start RetrievalService and MemoryService as two processes, then the web console
(``strata console``, http://127.0.0.1:8080); stop all on Ctrl-C/SIGTERM.

Each service is its own process (as in production, where each scales on its own); this launcher only
starts them in order, waits until each reports SERVING, and forwards shutdown signals. It refuses
to start when either address already answers (naming what answers), points MemoryService at
``STRATA_RETRIEVAL_ADDRESS`` unless ``STRATA_MEMORY_RETRIEVAL_ADDRESS`` says otherwise, prints one
"next:" line, and exits non-zero when any process it started dies.
:class:`Launcher` does that for `make run-cluster` (``scripts/run_cluster.py``) too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from types import TracebackType

import grpc

from scripts.address_owner import what_answers
from strata.retrieval.v1 import retrieval_pb2
from strata_serving.probe import wait_until_serving
from strata_serving.status import error_info_from

SERVICES = (
    ("retrieval", "strata_retrieval.main", "STRATA_RETRIEVAL_ADDRESS", "127.0.0.1:50052"),
    ("memory", "strata_memory.main", "STRATA_MEMORY_ADDRESS", "127.0.0.1:50051"),
)


class Launcher:
    """Service processes started in order and stopped together: on leaving the ``with`` block each
    still running gets SIGTERM, the last started first, and is waited for. SIGINT and SIGTERM to
    the launcher end :meth:`serve`."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self._stopping = False

    def __enter__(self) -> Launcher:
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGTERM, self._stop)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            process.wait(timeout=30)

    def _stop(self, _signum: int, _frame: object) -> None:
        self._stopping = True

    def spawn(self, module: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``python -m module`` (with ``env``, or this environment)."""
        process = subprocess.Popen([sys.executable, "-m", module], env=env)
        self.processes.append(process)
        return process

    def serving(
        self,
        name: str,
        address: str,
        process: subprocess.Popen[bytes],
        refusal: Callable[[str], str | None] | None = None,
    ) -> None:
        """Wait until the process reports SERVING on ``address``, and say so; stop at once with the
        reason when ``refusal`` says it never will."""
        try:
            wait_until_serving(address, process, refusal=refusal)
        except (RuntimeError, TimeoutError) as failure:
            raise SystemExit(f"{name}: {failure}") from None
        print(f"strata: {name} SERVING on {address}", file=sys.stderr, flush=True)

    def serve(self, carry_on: Callable[[], bool]) -> None:
        """Return on SIGINT/SIGTERM, or once ``carry_on()`` says the services cannot go on."""
        while not self._stopping and carry_on():
            time.sleep(0.5)


def retrieval_refusal(address: str) -> str | None:
    """Why a RetrievalService that is up but NOT_SERVING never will be as configured (an index built
    with another embedding model, its disk full: it answers every call with that), or None while it
    is starting, serving, or cannot be asked (TLS, an API key)."""
    with grpc.insecure_channel(address) as channel:
        stats = channel.unary_unary(
            "/strata.retrieval.v1.RetrievalService/Stats",
            request_serializer=retrieval_pb2.StatsRequest.SerializeToString,
            response_deserializer=retrieval_pb2.StatsResponse.FromString,
        )
        try:
            stats(retrieval_pb2.StatsRequest(), timeout=1.0)
        except grpc.RpcError as refused:
            if refused.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED):
                return f"{refused.code().name} ({_reason(refused)}): {refused.details()}"
    return None


def _reason(error: grpc.RpcError) -> str:
    """The ErrorInfo reason Strata's errors carry, from the status details."""
    info = error_info_from(error.trailing_metadata())
    return info.reason if info is not None else "no reason given"


def console_environment() -> dict[str, str]:
    """The web console's environment: the two services as started above, unless set otherwise."""
    env = dict(os.environ)
    for variable, service in (("MEMORY_TARGET", SERVICES[1]), ("RETRIEVAL_TARGET", SERVICES[0])):
        env.setdefault(f"STRATA_CONSOLE_{variable}", os.environ.get(service[2], service[3]))
    return env


def main() -> int:
    """Refuse to start over a running server; start all; exit non-zero when one of them dies."""
    addresses = {name: os.environ.get(variable, default) for name, _, variable, default in SERVICES}
    if taken := [said for address in addresses.values() if (said := what_answers(address))]:
        for said in taken:
            print(f"strata: {said}", file=sys.stderr)
        print(
            "strata: stop it (Ctrl-C in its terminal), or set STRATA_MEMORY_ADDRESS and "
            "STRATA_RETRIEVAL_ADDRESS to free ports",
            file=sys.stderr,
        )
        return 1
    env = os.environ | {
        "STRATA_MEMORY_RETRIEVAL_ADDRESS": os.environ.get(
            "STRATA_MEMORY_RETRIEVAL_ADDRESS", addresses["retrieval"]
        )
    }
    with Launcher() as launcher:
        names = {}
        for name, module, _, _ in SERVICES:
            refusal = retrieval_refusal if name == "retrieval" else None
            process = launcher.spawn(module, env)
            names[process.pid] = f"{name} service"
            launcher.serving(f"{name} service", addresses[name], process, refusal)
        names[launcher.spawn("strata.console", console_environment()).pid] = "console"
        print(_next_line(addresses["memory"]), file=sys.stderr, flush=True)
        launcher.serve(lambda: all(p.poll() is None for p in launcher.processes))
        if dead := [p for p in launcher.processes if p.poll() is not None]:
            for process in dead:
                print(
                    f"strata: {names[process.pid]} exited with code {process.returncode}; "
                    "stopping the others",
                    file=sys.stderr,
                )
            return 1
    return 0


def _next_line(memory_address: str) -> str:
    target = "" if memory_address == SERVICES[1][3] else f"STRATA_MEMORY_TARGET={memory_address} "
    host, port = (
        os.environ.get("STRATA_CONSOLE_HOST", "127.0.0.1"),
        os.environ.get("STRATA_CONSOLE_PORT", "8080"),
    )
    console = f"http://{host}:{port}"
    return f"next: {target}strata agents list, or open {console}   (Ctrl-C here stops them all)"


if __name__ == "__main__":
    raise SystemExit(main())
