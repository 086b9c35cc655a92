"""The CLI says where it looked and what it found (issue 31 item 7): a stopped server (UNAVAILABLE)
and a wrong port (UNIMPLEMENTED: another service answers) each get a hint naming the address,
what serves it, and how to point the CLI at MemoryService (``--target``, ``STRATA_MEMORY_TARGET``)."""

from __future__ import annotations

import pytest

from strata.cli.main import main
from tests.memory_process import free_port


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--timeout", "5", *args])
    return code, capsys.readouterr().err


def test_nothing_listening_names_the_address_and_how_to_point_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = f"127.0.0.1:{free_port()}"
    code, err = _run(capsys, "--target", target, "agents", "list")
    assert code == 1
    assert "strata: UNAVAILABLE" in err
    (hint,) = [line for line in err.splitlines() if line.startswith("hint:")]
    assert f"nothing answers gRPC at {target}" in hint
    assert "STRATA_MEMORY_TARGET" in hint
    assert "--target" in hint


def test_a_wrong_port_names_the_service_that_answers_there(
    capsys: pytest.CaptureFixture[str], retrieval_target: str
) -> None:
    code, err = _run(capsys, "--target", retrieval_target, "agents", "list")
    assert code == 1
    assert "strata: UNIMPLEMENTED" in err
    (hint,) = [line for line in err.splitlines() if line.startswith("hint:")]
    assert f"{retrieval_target} serves strata.retrieval.v1.RetrievalService" in hint
    assert "STRATA_MEMORY_TARGET" in hint


def test_a_memoryservice_error_gets_no_hint(capsys: pytest.CaptureFixture[str], memory_target: str) -> None:
    code, err = _run(capsys, "--target", memory_target, "agents", "get", "no-such-agent")
    assert code == 1
    assert "strata: NOT_FOUND" in err
    assert "hint:" not in err
