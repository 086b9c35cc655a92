"""A shared folder cannot send the user's API key to a server of its choosing (``strata/memfs/trust.py``):
the recorded target is used only when it is the configured one or the user confirmed it once
(recorded outside the folder), and a key never crosses plaintext to a non-loopback host unless the
user names that target in the run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from strata.cli.main import main
from strata.memfs import trust
from strata.memfs.state import STATE_PATH
from tests.memfs.conftest import Memfs, block

KEY = "sk_test_secret_key_0123456789"


if TYPE_CHECKING:  # grpc's classes are generic only in their type stubs
    _Handler = grpc.GenericRpcHandler[bytes, bytes]
else:
    _Handler = grpc.GenericRpcHandler


class Recorder(_Handler):
    """A hostile server: records every call's metadata and answers nothing useful."""

    def __init__(self) -> None:
        self.metadata: list[dict[str, str]] = []
        self.asked_what_it_serves: list[dict[str, str]] = []  # the CLI's hint after UNIMPLEMENTED

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> None:
        metadata = {k: str(v) for k, v in handler_call_details.invocation_metadata}
        if handler_call_details.method.startswith("/grpc.reflection."):
            self.asked_what_it_serves.append(metadata)
        elif not handler_call_details.method.startswith("/grpc.health."):  # the channel's own probe
            self.metadata.append(metadata)


@pytest.fixture
def hostile() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[recorder])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", recorder
    server.stop(0)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)


def retarget(root: Path, target: str) -> None:
    state = json.loads((root / STATE_PATH).read_text())
    state["target"] = target
    (root / STATE_PATH).write_text(json.dumps(state))


def run(memfs: Memfs, *argv: str) -> tuple[int, str]:
    memfs.capsys.readouterr()
    code = main(["--timeout", "3", *argv])
    return code, memfs.capsys.readouterr().err


def test_a_folder_naming_another_server_gets_no_key_until_the_user_confirms_it(
    memfs: Memfs, tmp_path: Path, hostile: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    address, recorder = hostile
    agent_id = memfs.agent(block("notes", "n\n"))
    theirs = tmp_path / "theirs"
    memfs.ok("clone", agent_id, str(theirs))
    retarget(theirs, address)  # what a hostile commit in a shared folder says
    git(theirs, "commit", "--quiet", "-am", "point elsewhere")
    root = tmp_path / "shared"
    git(tmp_path, "clone", "--quiet", str(theirs), str(root))
    monkeypatch.setenv("STRATA_API_KEY", KEY)
    monkeypatch.delenv("STRATA_MEMORY_TARGET", raising=False)

    code, err = run(memfs, "memfs", "pull", "--dir", str(root))

    assert recorder.metadata == []
    assert code == 2
    assert f"names the server {address}, not your target 127.0.0.1:50051" in err
    assert f"run once with --target {address} to confirm it" in err
    assert not trust.confirmed(root, address)

    # Naming it is the confirmation; it is remembered outside the folder, and used from then on.
    run(memfs, "--target", address, "memfs", "pull", "--dir", str(root))
    assert [m.get("authorization") for m in recorder.metadata] == [f"Bearer {KEY}"]
    assert all("authorization" not in m for m in recorder.asked_what_it_serves)  # a hint sends no key
    assert trust.trust_path().exists()
    assert not trust.trust_path().is_relative_to(root)
    run(memfs, "memfs", "pull", "--dir", str(root))
    assert len(recorder.metadata) == 2
    # A copy of the folder elsewhere is not confirmed.
    copy = tmp_path / "copy"
    root.rename(copy)
    code, err = run(memfs, "memfs", "pull", "--dir", str(copy))
    assert (code, len(recorder.metadata)) == (2, 2)


def test_a_key_never_crosses_plaintext_to_a_remote_host_the_user_did_not_name(
    memfs: Memfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_id = memfs.agent(block("notes", "n\n"))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    remote = "192.0.2.10:443"  # TEST-NET-1: never reached, the command stops before connecting
    retarget(root, remote)
    trust.confirm(root, remote)
    monkeypatch.setenv("STRATA_API_KEY", KEY)
    monkeypatch.delenv("STRATA_MEMORY_TARGET", raising=False)

    code, err = run(memfs, "memfs", "status", "--dir", str(root))

    assert code == 2
    assert f"syncs with {remote} without TLS: your API key would cross the network in plain text" in err


@pytest.mark.parametrize(
    ("target", "loopback"),
    [
        ("127.0.0.1:50051", True),
        ("localhost:1", True),
        ("[::1]:8", True),
        ("ipv4:127.0.0.1:1,127.0.0.2:2", True),
        ("unix:/tmp/s.sock", True),
        ("ipv4:127.0.0.1:1,10.0.0.2:2", False),
        ("memory.example.com:443", False),
        ("dns:///memory.example.com:443", False),
        ("10.0.0.1:50051", False),
        ("[2001:db8::1]:443", False),
    ],
)
def test_loopback_means_every_host_the_target_names_is_this_machine(target: str, loopback: bool) -> None:
    assert trust.is_loopback(target) is loopback
